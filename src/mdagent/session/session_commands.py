"""The interactive session's own commands: ``/help``, ``/context``, ``/compact``, ``/resume``...

Each is a block registered on the session's :class:`~mdagent.session.commands.Commands`;
every name here is reserved (``registry.RESERVED_NAMES``), so no declaration
can shadow one. They print for the person and raise :class:`MdagentError`
for a line the session shows; the conversation itself lives in
:class:`~mdagent.session.repl.Repl`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mdagent.core.errors import UsageError
from mdagent.core.text import first_line
from mdagent.ui.console import described, table

if TYPE_CHECKING:
    from mdagent.session.repl import Repl

#: The session's prompt (mdagent.session.lineinput draws it).
PROMPT = "› "
#: The prompt in shell mode (``!`` alone): each line runs as a command.
SHELL_PROMPT = "! "
#: How much of a ``!command``'s output goes into the conversation (head and tail kept).
SHELL_CONTEXT_CHARS = 10_000


class Exit(Exception):
    """``/exit`` or ``/quit``: leave the session (raised by the commands, caught by the session)."""


class EmptyInterrupt(Exception):
    """Ctrl-C at an empty prompt (a second one in a row leaves the session)."""


#: What the model is asked for by ``/compact``.
COMPACT_REQUEST = (
    "Summarise this conversation so that it can continue from the summary alone: "
    "the task, what was decided and done (files, commands, results), what is still "
    "open, and any facts the next steps need. Be concise; use Markdown lists."
)

KEYS = (
    "Keys: Enter sends · Esc Enter or a trailing \\ starts a new line (a paste stays one "
    "message) · Tab completes (@ completes files) · Shift+Tab cycles the mode · Up/Down and "
    "Ctrl-R search the history · Ctrl-C cancels the running call, twice at an empty prompt "
    "leaves · Ctrl-D leaves · !cmd runs a command and the model sees its output with the next "
    "message · ! alone: shell mode, Esc leaves · Ctrl-O opens the last call's whole output and "
    "the conversation in a pager"
)


def register_builtins(repl: Repl) -> None:  # noqa: C901
    """Register the session's commands on ``repl.commands``."""
    register = repl.commands.register
    say = repl.say
    runtime = repl.runtime

    def all_names() -> list[str]:
        return [name[1:] for name in repl.completions()]

    @register("help", "List the commands, or show one: /help NAME", completions=all_names)
    def _help(name: str | None) -> None:
        if name:
            say(_help_for(repl, name.lstrip("/")))
            return
        own = described(repl.commands)
        from mdagent.runtime.person import command_listing

        say(f"{own}\n{command_listing(runtime.registry)}\nAnything else is a message to the model.")
        if repl.interactive:
            say(wrapped(KEYS))

    @register("exit", "Leave the session")
    def _exit(_: str | None) -> None:
        raise Exit

    @register("quit", "Leave the session")
    def _quit(_: str | None) -> None:
        raise Exit

    def tool_names() -> list[str]:
        return [t["name"] for t in _model_tools(repl)]

    @register("tools", "List the tools the model gets, or show one: /tools NAME", tool_names)
    def _tools(name: str | None) -> None:
        tools = _model_tools(repl)
        if not name:
            say(described((t["name"], t["description"]) for t in tools) or "(no tools)")
            return
        import json

        for tool in tools:
            if tool["name"] == name:
                schema = json.dumps(tool.get("parameters") or {}, indent=2, ensure_ascii=False)
                say(f"{tool['name']}\n{tool['description']}\nParameters: {schema}")
                return
        raise UsageError(f"no tool {name!r} for the model (see /tools)")

    @register("commands", "List the declared commands")
    def _commands(_: str | None) -> None:
        from mdagent.runtime.person import command_listing

        say(command_listing(runtime.registry))

    @register("skills", "List the skills")
    def _skills(_: str | None) -> None:
        skills = runtime.registry.skills.values()
        say(described((s.name, s.description) for s in skills) or "(no skills)")

    @register("clear", "Start a new conversation")
    def _clear(_: str | None) -> None:
        repl.new_conversation()
        say("(new conversation)")

    @register("model", "Show the provider and model, or switch: /model NAME")
    def _model(name: str | None) -> None:
        if name:
            repl.drop_provider()
            runtime.options.model = name
        config = repl.config()
        where = f" at {config.base_url}" if config.base_url else ""
        say(f"{config.provider} {config.model}{where}")

    def modes() -> list[str]:
        from mdagent.safety.modes import MODES

        return list(MODES)

    @register(
        "mode",
        "Show the permission mode, or switch: /mode ask|accept-edits|plan|full (Shift+Tab cycles)",
        modes,
    )
    def _mode(name: str | None) -> None:
        if name:
            repl.set_mode(name)
        mode = runtime.mode
        say(f"mode: {mode.mode} ({mode.source})")

    def session_ids() -> list[str]:
        return [row["id"] for row in runtime.store.sessions(cwd=str(runtime.workdir))]

    @register("sessions", "List this workspace's conversations")
    def _sessions(_: str | None) -> None:
        rows = runtime.store.sessions(cwd=str(runtime.workdir))
        if not rows:
            say("(no sessions in this workspace)")
            return
        listing = [
            [
                ("* " if r["id"] == repl.session_id else "  ") + r["id"],
                str(r["updated"])[:19].replace("T", " "),
                str(r["messages"]),
                first_line(r.get("title"), 60),
            ]
            for r in rows
        ]
        say(table(listing, ["  ID", "UPDATED", "MESSAGES", "TITLE"], fit=True))

    @register("resume", "Continue a conversation: /resume [ID] (default: the latest)", session_ids)
    def _resume(id_or_prefix: str | None) -> None:
        conversation = repl.resume(id_or_prefix)
        say(f"(resumed session {conversation.session_id}: {len(conversation.messages)} messages)")
        last = [m for m in conversation.messages if m.get("role") in ("user", "assistant")]
        from mdagent.ui.transcript import message_line

        for message in last[-2:]:
            say(first_line(message_line(message), 200))

    @register("history", "Show this conversation as it went (Ctrl-O: whole outputs)")
    def _history(_: str | None) -> None:
        from mdagent.ui.transcript import conversation_text

        if not repl.messages:
            say("(no messages yet)")
            return
        say(conversation_text(repl.messages))

    @register("context", "What the conversation holds: messages, tokens, skills")
    def _context(_: str | None) -> None:
        say(context_report(repl))

    @register("compact", "Replace the history with the model's summary of it")
    def _compact(_: str | None) -> None:
        compact(repl)

    @register(
        "rewind",
        "Take back model turns: /rewind lists them, /rewind N restores the files and the "
        "conversation to before turn N (--files-only, --conversation-only, --force)",
    )
    def _rewind(text: str | None) -> None:
        rewind(repl, text)

    @register("reload", "Read the declarations and skills again")
    def _reload(_: str | None) -> None:
        repl.reload(force=True)
        registry = runtime.registry
        errors = len(registry.errors)
        say(
            f"(reloaded: {len(registry.commands)} commands, {len(registry.tools)} tools, "
            f"{len(registry.skills)} skills" + (f", {errors} errors" if errors else "") + ")"
        )


def rewind(repl: Repl, text: str | None) -> None:
    """``/rewind``: the list of turns, or the files and the conversation back to checkpoint N."""
    from mdagent.agent.rewindcommand import (
        Request,
        listing,
        open_checkpoints,
        parse_request,
        rewind_conversation,
        rewind_files,
    )

    request = parse_request(text)
    runtime = repl.runtime
    checkpoints = open_checkpoints(runtime)
    if request.target is None:
        if request != Request():  # flags without a checkpoint
            raise UsageError("/rewind: which checkpoint? /rewind N (see /rewind for the list)")
        repl.say(listing(checkpoints).replace("agent rewind N", "/rewind N"))
        return
    target = checkpoints.get(request.target)
    if request.files:
        _, lines = rewind_files(
            runtime, checkpoints, target, force=request.force, session_id=repl.session_id or ""
        )
        for line in lines:
            repl.say(line.replace("agent rewind", "/rewind"))
    if request.conversation:
        conversation, said = rewind_conversation(runtime, target)
        if conversation is not None:
            repl.new_conversation(conversation)
            said += f"; this session goes on from there ({len(conversation.messages)} messages)"
        repl.say(said)


def wrapped(text: str) -> str:
    """``text`` in lines that fit the terminal, broken between words (as it is when piped)."""
    from mdagent.ui.console import terminal_width

    width = terminal_width()
    if width is None:
        return text
    import textwrap

    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


def _model_tools(repl: Repl) -> list[dict[str, Any]]:
    from mdagent.agent.prompts import model_tools

    return model_tools(repl.person_box(), repl.runtime.settings)


def _help_for(repl: Repl, name: str) -> str:
    from mdagent.session.commands import command_key

    own = dict(repl.commands)
    if f"/{command_key(name)}" in own:
        return f"/{command_key(name)} - {own[f'/{command_key(name)}']}"
    from mdagent.runtime.person import command_help

    command = repl.runtime.registry.command(name)
    if command is None or not command.user_invocable:
        raise UsageError(repl.unknown(name))
    return command_help(repl.runtime, name)  # what `agent /name --help` prints


def estimate_tokens(text: str) -> int:
    """About four characters a token: an estimate, said to be one where it is shown."""
    return (len(text) + 3) // 4


def context_report(repl: Repl) -> str:
    """``/context``: the messages by role, their estimated size, tokens used, skills loaded."""
    import json

    messages = repl.messages
    roles: dict[str, int] = {}
    for message in messages:
        role = str(message.get("role", "?"))
        roles[role] = roles.get(role, 0) + 1
    chars = sum(len(json.dumps(m, ensure_ascii=False, default=str)) for m in messages)
    by_role = ", ".join(f"{n} {role}" for role, n in roles.items())
    lines = [
        f"session: {repl.session_id or '(new, not started)'}",
        f"messages: {len(messages)}" + (f" ({by_role})" if by_role else ""),
        f"history: ~{estimate_tokens('x' * chars):,} tokens (estimated from {chars:,} characters)",
        f"tokens this session: {repl.usage['input_tokens']:,} in, "
        f"{repl.usage['output_tokens']:,} out (as the provider counted them)",
    ]
    skills = list(repl.skills_used)
    for message in messages:
        for call in message.get("tool_calls") or ():
            arguments = call.get("arguments")
            if call.get("name") == "skill" and isinstance(arguments, dict):
                name = str(arguments.get("name", "")).lstrip("/")
                if name and name not in skills:
                    skills.append(name)
    lines.append("skills loaded: " + (", ".join(skills) or "(none)"))
    return "\n".join(lines)


def compact(repl: Repl) -> None:
    """Ask the model for a summary; a new conversation starts from it.

    The old conversation stays in the store as it was (``/resume`` it, or
    ``agent sessions show``); the new one's first message is the summary.
    """
    from mdagent.agent.conversation import Conversation
    from mdagent.agent.prompts import system_prompt

    before = list(repl.messages)
    if not before:
        raise UsageError("nothing to compact yet")
    old_id = repl.session_id
    runtime = repl.runtime
    provider = repl.provider()
    display = repl.display()
    system = system_prompt(
        workdir=runtime.workdir,
        cwd=runtime.cwd,
        settings=runtime.settings,
        registry=runtime.registry,
        tool_names=[],
    )
    request = [*before, {"role": "user", "content": COMPACT_REQUEST}]
    with display.waiting():
        reply = provider.complete(system, request, [], on_retry=display.retrying)
    summary = (reply.text or "").strip()
    if not summary:
        raise UsageError("the model gave no summary; the history is unchanged")
    for key in repl.usage:
        repl.usage[key] += int((reply.usage or {}).get(key) or 0)
    conversation = Conversation.start(
        runtime.store,
        cwd=str(runtime.workdir),
        model=repl.config().model,
        title=f"/compact of {old_id}",
    )
    conversation.add(
        {
            "role": "user",
            "content": f"Summary of the conversation so far (session {old_id}):\n\n{summary}",
        }
    )
    usage = repl.usage
    repl.new_conversation(conversation)
    repl.usage = usage
    repl.say(
        f"(compacted {len(before)} messages into a summary; now session "
        f"{conversation.session_id}, the full history stays in session {old_id})"
    )
