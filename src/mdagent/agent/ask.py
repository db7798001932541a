"""Entry points of an agent turn (``agent ask``, a prompt skill, an MCP prompt) and their wiring.

These are the edge between a :class:`~mdagent.runtime.runtime.Runtime` and the loop:
they pick the provider, open the session, build the :class:`~mdagent.agent.loop.Agent`
with its prompt, tools, hooks and :class:`~mdagent.ui.display.Display`, run the
turn and turn its :class:`~mdagent.agent.loop.Outcome` into what is printed and an
exit status. The interactive session (:mod:`mdagent.session.repl`) builds its agents
here too.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mdagent.agent.conversation import Conversation
from mdagent.agent.loop import Agent, Outcome
from mdagent.agent.prompts import model_tools, system_prompt
from mdagent.agent.skillrunner import SkillRunner
from mdagent.core.defaults import setting
from mdagent.core.errors import ToolFailed, UsageError
from mdagent.core.specs import unmet_requirement
from mdagent.ui.display import Display

if TYPE_CHECKING:
    from mdagent.core.calls import ToolContext
    from mdagent.core.specs import CommandSpec, Skill
    from mdagent.providers.config import Provider, ProviderConfig
    from mdagent.runtime.runtime import Runtime
    from mdagent.tools.toolbox import Toolbox


def make_provider(
    runtime: Runtime, model: dict[str, str] | None = None
) -> tuple[Provider, ProviderConfig]:
    """``(provider, config)`` from agent.yaml, the command-line overrides and the environment.

    ``model`` is a prompt skill's ``model:`` (``{provider, model, base_url}``):
    it beats agent.yaml and the environment, and yields to what the person
    gave on the command line. The API key goes only where the person sent
    it (:func:`mdagent.runtime.keybinding.key_withheld`): to an endpoint only the skill
    names the request goes without it, and the person is told once.
    """
    from mdagent.providers import ProviderConfig, get_provider

    given = {k: v for k, v in runtime.options.model_overrides.items() if v is not None}
    config = ProviderConfig.from_settings(runtime.settings, {**(model or {}), **given}, os.environ)
    if model:
        config = _bound_key(runtime, config, given)
    if not config.withhold_key:
        require_key(config)
    return get_provider(config), config


def _bound_key(runtime: Runtime, config: ProviderConfig, given: dict[str, str]) -> ProviderConfig:
    """``config``, its key withheld when a skill's endpoint is not one the key was given to."""
    from dataclasses import replace

    from mdagent.providers import ProviderConfig
    from mdagent.providers.config import DEFAULTS
    from mdagent.runtime.keybinding import key_withheld

    person = ProviderConfig.from_settings(runtime.settings, given, os.environ)
    if not key_withheld(config, person, runtime.settings.get("key_hosts")):
        return config
    defaults = DEFAULTS.get(config.provider, {})
    variable = config.api_key_env or defaults.get("api_key_env")
    if variable and os.environ.get(variable):
        from mdagent.runtime.trust import tell

        url = config.base_url or defaults.get("base_url")
        tell(
            f"{url} gets no {variable}: a key goes only to its provider's host and the "
            "base_url you set (key_hosts: in your user agent.yaml pairs others)"
        )
    return replace(config, withhold_key=True)


def require_key(config: ProviderConfig) -> None:
    """Refuse, before any request, a model that needs an API key nobody set (exit 2).

    The message names the provider, endpoint and variable, and shows the
    three ways to configure a model (see :func:`mdagent.runtime.init.missing_key`).
    """
    from mdagent.core.errors import ConfigError
    from mdagent.runtime.init import missing_key

    problem = missing_key(config, os.environ)
    if problem:
        raise ConfigError(problem)


def open_conversation(
    runtime: Runtime,
    model: str,
    *,
    continue_: bool = False,
    session: str | None = None,
    title: str = "",
) -> Conversation:
    """The session to add to: ``session`` (id or prefix), the latest one, or a new one.

    ``continue_`` takes the latest session of this workspace (sessions belong
    to a workspace: another project's conversation is not continued here).
    An unknown ``session`` is a :class:`UsageError`.
    """
    store = runtime.store
    if session:
        found = store.session(session)
        if found is None:
            raise UsageError(f"no session {session!r} (see: agent sessions)")
        return Conversation.resume(store, found["id"])
    if continue_:
        latest = store.latest_session(str(runtime.workdir))
        if latest is not None:
            return Conversation.resume(store, latest)
        print("agent: no session to continue; starting a new one", file=sys.stderr)
    return Conversation.start(store, cwd=str(runtime.workdir), model=model, title=title)


def build_agent(
    runtime: Runtime,
    provider: Provider,
    conversation: Conversation,
    *,
    allow: Iterable[str] = (),
    display: Display | None = None,
    toolbox: Toolbox | None = None,
    without: Iterable[str] = (),
    max_steps: int | None = None,
    fork: bool = True,
) -> Agent:
    """An :class:`Agent` wired to ``runtime``: its toolbox, policy, settings and prompt.

    ``allow`` pre-approves tools for this agent only (a prompt skill's
    ``allowed-tools``). ``toolbox`` reuses one built by ``runtime.toolbox``
    (an interactive session keeps one, so "always" answers last all session).
    ``without`` withholds tools from the model (a skill's ``disallowed-tools``),
    ``max_steps`` overrides ``agent.max_steps``. A ``context: fork`` skill the
    model loads runs as a sub-conversation of this one; ``fork=False`` (inside
    a forked run) refuses that: forked runs do not nest.
    """
    from mdagent.agent.checkpointing import turn_checkpoints
    from mdagent.tools.hooks import session_hooks

    options = runtime.options
    box = toolbox
    if box is None:
        policy = runtime.policy(allow=list(allow))
        box = runtime.toolbox(policy=policy, session_id=conversation.session_id)
    tools = model_tools(box, runtime.settings, without=_tool_names(without))
    if options.tools is not None:
        tools = only_tools(box, tools, options.tools)

    def read_denied(path: str) -> str | None:
        # What a memory file imports is read for the model: read_file's deny rules apply.
        from types import SimpleNamespace

        screen = getattr(box.policy, "screen", None)
        if screen is None:
            return None
        tool = SimpleNamespace(name="read_file", aliases=())
        decision = screen(tool, {"path": path}, runtime.context(box, caller="model"))
        return None if decision is None else str(decision.reason or "denied by policy")

    system = system_prompt(
        workdir=runtime.workdir,
        cwd=runtime.cwd,
        settings=runtime.settings,
        registry=runtime.registry,
        tool_names=[t["name"] for t in tools],
        read_denied=read_denied,
    )
    if fork:  # the person's own turn; a forked skill keeps its usual prompt
        system = run_system_prompt(options, system)

    shown = display or _default_display(runtime)
    live = getattr(shown, "live_output", None)
    skills = SkillRunner()  # the skills the model loads: rendered, or run forked, here

    def context(call_id: str | None) -> ToolContext:
        return runtime.context(
            box,
            caller="model",
            conversation_id=conversation.session_id,
            tool_call_id=call_id,
            # On a terminal a command's last lines show under the spinner as it runs.
            output=live() if callable(live) else None,
            skill_runner=skills,
        )

    _register_fork(runtime, conversation, enabled=fork)
    steps = options.max_steps or max_steps or int(setting(runtime.settings, "agent", "max_steps"))
    _observe_asks(box, shown)
    return Agent(
        provider,
        box,
        system=system,
        tools=tools,
        conversation=conversation,
        max_steps=steps,
        context=context,
        display=shown,
        hooks=session_hooks(
            runtime.settings,
            workdir=str(runtime.workdir),
            env=runtime.env,
            trust_check=runtime.trust_lapsed_now,
        ),
        checkpoints=turn_checkpoints(runtime, conversation.session_id),
        limit_name="--max-steps" if options.max_steps else "agent.max_steps",
    )


def only_tools(
    box: Toolbox, tools: list[dict[str, Any]], names: Iterable[str]
) -> list[dict[str, Any]]:
    """``tools`` narrowed to ``names`` (``--tools``: names or aliases); a name no tool has is
    a :class:`UsageError` listing the tools there are."""
    from mdagent.tools.toolbox import UnknownTool

    wanted = set()
    for name in names:
        tool = box.tool_for(name)
        if isinstance(tool, UnknownTool):
            listing = ", ".join(sorted(t["name"] for t in tools))
            raise UsageError(f"--tools: no tool {name!r} (the tools offered here: {listing})")
        wanted.add(tool.name)
    return [t for t in tools if t["name"] in wanted]


def run_system_prompt(options: Any, system: str) -> str:
    """The system prompt with ``--system-prompt`` (replaces it) and ``--append-system-prompt``."""
    if options.system_prompt is not None:
        system = prompt_text(options.system_prompt, "--system-prompt")
    if options.append_system_prompt is not None:
        extra = prompt_text(options.append_system_prompt, "--append-system-prompt")
        system = system.rstrip("\n") + "\n\n" + extra.strip() + "\n"
    return system


def prompt_text(value: str, option: str) -> str:
    """``value``, or the text of the file ``@FILE`` names; a file that cannot be read is a usage error."""
    if not value.startswith("@"):
        return value
    path = value[1:]
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as err:
        raise UsageError(
            f"{option}: cannot read {path}: {getattr(err, 'strerror', None) or err}"
        ) from None


def _observe_asks(box: Toolbox, display: Any) -> None:
    """With stream-json, every question the policy had (and its answer) becomes an ``ask`` event."""
    asked = getattr(display, "asked", None)
    if asked is None:
        return

    def observe(name: str, args: Any, result: Any, decision: Any, took: float, ctx: Any) -> None:
        asked(name, decision, result, getattr(ctx, "tool_call_id", None))

    box.observers.append(observe)


def _default_display(runtime: Runtime) -> Any:
    """Events with stream-json; Markdown answers on a terminal (rich, imported only then);
    plain text otherwise."""
    if runtime.options.stream_json:
        from mdagent.ui.events import EventDisplay

        return EventDisplay(redact=runtime.store.redacted)
    if not runtime.options.json and sys.stdout.isatty():
        from mdagent.ui.render import MarkdownDisplay

        return MarkdownDisplay()
    return Display(show_text=not runtime.options.json)


def finish(runtime: Runtime, outcome: Outcome) -> int:
    """Print how the turn ended (the JSON object with ``--json``, the ``result`` event with
    stream-json); the exit status.

    On a terminal the last line (stderr, dimmed) is what the turn took:
    tokens, and the cost when ``model.price`` is known; ``--json`` has them
    as ``usage`` and ``cost``. With ``--fail-on-refusal`` a turn that
    answered although the policy refused a tool call exits
    :data:`~mdagent.core.errors.EXIT_REFUSED`, and says so.
    """
    options = runtime.options
    status = outcome.exit_status
    refused = outcome.refusals
    if options.fail_on_refusal and refused and status == 0:
        from mdagent.core.errors import EXIT_REFUSED

        status = EXIT_REFUSED
    if options.stream_json:
        from mdagent.ui.events import emit, outcome_result

        emit("result", **outcome_result(outcome, status))
        return status
    if options.json:
        data = outcome.to_dict()
        data["exit_status"] = status
        data["refused"] = len(refused)
        print(json.dumps(data, ensure_ascii=False, default=str))
    if outcome.message and not options.json:  # --json: the object's "error" says it
        from mdagent.ui.console import say_error

        say_error(outcome.message)
    if status != outcome.exit_status and not options.json:
        from mdagent.ui.console import say_error

        names = ", ".join(dict.fromkeys(c["name"] for c in refused))
        say_error(
            f"the policy refused {len(refused)} tool call(s) ({names}); "
            "exit status 4 (--fail-on-refusal)"
        )
    if not options.json:
        _show_usage(outcome)
    return status


def start_events(runtime: Runtime, conversation: Conversation, config: ProviderConfig) -> None:
    """The ``start`` event of a stream-json run (then the notes held until it)."""
    if not runtime.options.stream_json:
        return
    from mdagent.ui import events

    mode = runtime.mode
    events.emit(
        "start",
        session=conversation.session_id,
        model=config.model,
        provider=config.provider,
        workspace=str(runtime.workdir),
        mode=mode.mode,
        mode_source=mode.source,
    )
    events.started()


def _show_usage(outcome: Outcome) -> None:
    from mdagent.ui.console import is_terminal, paint
    from mdagent.ui.display import usage_line

    line = usage_line(outcome.usage, outcome.cost)
    if line and is_terminal(sys.stderr):
        print(paint(line, "dim", sys.stderr), file=sys.stderr, flush=True)


def run_ask(
    runtime: Runtime, text: str, *, continue_: bool = False, session: str | None = None
) -> int:
    """``agent ask TEXT``: one agent turn; returns the exit status.

    ``continue_`` resumes the latest session, ``session`` a given one.
    Provider errors propagate (the CLI prints one line and exits 1); Ctrl-C
    raises :class:`Interrupted` (exit 130) after saving the session.
    """
    if runtime.options.stream_json:
        from mdagent.ui.events import capture_notices

        capture_notices()
    runtime.check_settings()
    from mdagent.agent.mentions import with_mentions

    message = with_mentions(runtime, text)
    provider, config = make_provider(runtime)
    try:
        conversation = open_conversation(
            runtime, config.model, continue_=continue_, session=session
        )
        agent = build_agent(runtime, provider, conversation)
        start_events(runtime, conversation, config)
        return finish(runtime, agent.run(message))
    finally:
        close_provider(provider)
        _release_notices(runtime)


def _release_notices(runtime: Runtime) -> None:
    if runtime.options.stream_json:
        from mdagent.ui.events import release_notices

        release_notices()


def run_prompt_skill(runtime: Runtime, command: CommandSpec, argv: list[str]) -> int:
    """``agent /name args`` for a prompt skill: an agent turn on the skill's body.

    The body is rendered by :func:`mdagent.agent.promptskills.render` (arguments,
    ``@{path}`` includes, ``` !`cmd` ``` run as the person's calls); the
    arguments string is the single word verbatim, or the words joined with
    ``shlex.join``. The skill's ``allowed-tools`` are pre-approved for this
    turn only, its ``disallowed-tools`` withheld, its ``model:`` and
    ``max_steps:`` used. ``context: fork`` runs it in a sub-conversation
    whose answer alone goes back to a session of the person's turn.
    """
    if not runtime.options.stream_json:
        return _run_prompt_skill(runtime, command, argv)
    from mdagent.ui.events import capture_notices

    capture_notices()
    try:
        return _run_prompt_skill(runtime, command, argv)
    finally:
        _release_notices(runtime)


def _run_prompt_skill(runtime: Runtime, command: CommandSpec, argv: list[str]) -> int:
    skill = prompt_skill(runtime, command)
    arguments = argv[0] if len(argv) == 1 else shlex.join(argv)
    box = runtime.toolbox(policy=runtime.person_policy())
    message = skill_message(
        skill, arguments, runtime.context(box, caller="person"), words=list(argv)
    )
    title = f"/{command.name} {arguments}".strip()
    if skill.context == "fork":
        parent = _session(runtime, title, model=_model_name(runtime, skill))
        parent.add({"role": "user", "content": title})
        if runtime.options.stream_json:
            from mdagent.providers import ProviderConfig

            given = {k: v for k, v in runtime.options.model_overrides.items() if v is not None}
            start_events(
                runtime,
                parent,
                ProviderConfig.from_settings(
                    runtime.settings, {**(skill.model or {}), **given}, os.environ
                ),
            )
        outcome = run_fork(runtime, skill, message, parent=parent.session_id, typed=True)
        if outcome.answer is not None:
            parent.add({"role": "assistant", "content": outcome.answer})
        return finish(runtime, outcome)
    provider, config = _skill_provider(runtime, skill)
    try:
        conversation = _session(runtime, title, model=config.model)
        agent = build_agent(runtime, provider, conversation, **skill_turn(skill))
        start_events(runtime, conversation, config)
        return finish(runtime, agent.run(message))
    finally:
        close_provider(provider)


def run_server_prompt(runtime: Runtime, server: str, prompt_name: str, argv: list[str]) -> int:
    """``agent /server:prompt ARGS``: the server renders the prompt, a model turn answers it.

    The turn is ``agent ask``'s: the same tools, policy and session log; the
    prompt's messages open the conversation. The prompt itself (its
    arguments, its messages) comes from :class:`mdagent.mcp.mcptools.McpTools`.
    """
    from mdagent.mcp.mcptools import prompt_spec
    from mdagent.tools.dispatch import help_text, parse_words, usage
    from mdagent.tools.toolbox import Tool

    mcp = runtime.mcp
    prompt = mcp.prompt(server, prompt_name)
    command, stand_in = prompt_spec(server, prompt)
    if argv == ["--help"]:
        print(help_text(command, stand_in))
        return 0
    arguments = parse_words(list(argv), stand_in, command)
    check = Tool(stand_in.name, "", dict, stand_in.params, tuple(stand_in.required))
    problems = check.validate(arguments)
    if problems:
        raise UsageError(f"/{command.name}: {', '.join(problems)}\n{usage(command, stand_in)}")
    runtime.check_settings()
    messages = mcp.clients().get_prompt(server, str(prompt["name"]), arguments)
    if not messages:
        raise ToolFailed(f"mcp server {server}: prompt {prompt_name} gave no messages")
    return _server_prompt_turn(runtime, command, messages)


def _server_prompt_turn(
    runtime: Runtime, command: CommandSpec, messages: list[dict[str, str]]
) -> int:
    provider, config = make_provider(runtime)
    try:
        conversation = Conversation.start(
            runtime.store, cwd=str(runtime.workdir), model=config.model, title=f"/{command.name}"
        )
        *before, last = messages
        for message in before:
            conversation.add(dict(message))
        if last["role"] != "user":  # a prompt that ends with the assistant's words
            conversation.add(dict(last))
            last = {"role": "user", "content": "Continue."}
        agent = build_agent(runtime, provider, conversation)
        return finish(runtime, agent.run(dict(last)))
    finally:
        close_provider(provider)


def run_fork(
    runtime: Runtime,
    skill: Skill,
    message: dict[str, Any],
    *,
    parent: str | None,
    typed: bool,
    display: Display | None = None,
) -> Outcome:
    """Run ``skill``'s turn on ``message`` in a fresh session linked to ``parent``.

    The sub-conversation has the skill's model, step limit and tools; its
    answer is the outcome's. Its own ``context: fork`` skills do not fork again.
    ``typed``: a person typed ``/name``, so the skill's ``allowed-tools`` are
    pre-approved; a fork the model starts runs under the caller's policy only.
    """
    provider, config = _skill_provider(runtime, skill)
    try:
        child = _session(runtime, f"/{skill.name} (forked)", model=config.model, parent=parent)
        agent = build_agent(
            runtime, provider, child, display=display, fork=False, **skill_turn(skill, typed=typed)
        )
        return agent.run(message)
    finally:
        close_provider(provider)


def _skill_provider(runtime: Runtime, skill: Skill) -> tuple[Provider, ProviderConfig]:
    # Called without a model when the skill names none: the one-argument form
    # is what tests (and benchmarks) replace to script the model.
    return make_provider(runtime, skill.model) if skill.model else make_provider(runtime)


def skill_turn(skill: Skill, *, typed: bool = True) -> dict[str, Any]:
    """The :func:`build_agent` options of a turn ``skill`` starts.

    ``typed``: a person typed ``/name``. Only then do the skill's
    ``allowed-tools`` pre-approve anything: a skill the model loads (inline
    or forked) must not widen the model's own permissions.
    """
    return {
        "allow": skill_allow_rules(skill) if typed else [],
        "without": skill.disallowed_tools,
        "max_steps": skill.max_steps,
    }


def _session(
    runtime: Runtime, title: str, *, model: str, parent: str | None = None
) -> Conversation:
    store = runtime.store
    sid = store.new_session(str(runtime.workdir), model, title, parent=parent)
    return Conversation(store=store, session_id=sid)


def _model_name(runtime: Runtime, skill: Skill) -> str:
    from mdagent.providers import ProviderConfig

    given = {k: v for k, v in runtime.options.model_overrides.items() if v is not None}
    try:
        return ProviderConfig.from_settings(
            runtime.settings, {**(skill.model or {}), **given}, os.environ
        ).model
    except Exception:  # the fork's own make_provider reports it
        return ""


def _register_fork(runtime: Runtime, conversation: Conversation, *, enabled: bool) -> None:
    """Let a ``context: fork`` skill the model loads in ``conversation`` run forked."""
    from mdagent.agent.promptskills import register_fork

    parent = conversation.session_id

    def run(skill: Skill, text: str, ctx: ToolContext) -> dict[str, Any]:
        if not enabled:
            return {"error": f"skill {skill.name} runs forked, and forked runs do not nest"}
        quiet = Display(show_text=False, spinner=False)
        # The model started this fork: no allowed-tools, the caller's policy only.
        outcome = run_fork(
            runtime,
            skill,
            {"role": "user", "content": text},
            parent=parent,
            typed=False,
            display=quiet,
        )
        if outcome.answer is None:
            return {
                "error": f"the forked run of skill {skill.name} ended without an answer: "
                f"{outcome.message}",
                "session": outcome.session,
            }
        return {"name": skill.name, "output": outcome.answer, "session": outcome.session}

    register_fork(parent, run)


def _tool_names(entries: Iterable[str]) -> list[str]:
    """``disallowed-tools`` entries as tool names (Claude Code's ``Bash`` is ``exec``)."""
    from mdagent.declarations.skills import TOOL_NAMES

    names = []
    for entry in entries:
        name = entry.split("(", 1)[0].strip()
        names.append(TOOL_NAMES.get(name.lower(), name))
    return names


def prompt_skill(runtime: Runtime, command: CommandSpec) -> Skill:
    """The skill behind a prompt command; :class:`ToolFailed` when it cannot run here."""
    skill = runtime.registry.skills.get(command.skill or command.name)
    if skill is None:
        raise UsageError(f"/{command.name}: no skill {command.skill or command.name!r}")
    reason = unmet_requirement(skill.requires)
    if reason:
        raise ToolFailed(f"/{command.name} is unavailable: {reason}")
    return skill


def skill_message(
    skill: Skill,
    arguments: str,
    ctx: ToolContext | None = None,
    *,
    words: list[str] | None = None,
) -> dict[str, Any]:
    """The user message of a prompt-skill turn: the body rendered for ``arguments``.

    ``ctx`` is the context of whoever triggered the skill (its ``caller``,
    toolbox, policy): the body's ``` !`cmd` ``` run as its calls. Without
    one nothing can run them: each says so in the prompt.
    """
    from mdagent.agent.promptskills import render
    from mdagent.core.calls import ToolContext

    if ctx is None:
        ctx = ToolContext(workdir=os.getcwd())
    return {"role": "user", "content": render(skill, arguments, ctx, words=words)}


def skill_allow_rules(skill: Skill) -> list[str]:
    """The policy rules a skill's ``allowed-tools`` grant for its turn (see :mod:`mdagent.declarations.skills`).

    Loading already turned the entries into rules and reported bad ones
    (``agent check``); converting again is a no-op for those and keeps a
    registry cached by an older version from granting more than it names.
    """
    from mdagent.core.errors import ConfigError
    from mdagent.declarations.skills import allowed_tool_rules

    rules: list[str] = []
    for text in skill.allowed_tools:
        try:
            granted = allowed_tool_rules(text)
        except ConfigError:
            continue  # reported by `agent check` at its line
        rules += [r for r in granted if r not in rules]
    return rules


def close_provider(provider: Provider) -> None:
    close = getattr(provider, "close", None)
    if callable(close):
        close()
