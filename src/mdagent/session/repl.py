"""``agent`` with no subcommand: the interactive session.

Each line (or pasted block) is one of

- ``/help``, ``/context``, ``/compact``, ``/resume``... : the session's own
  commands (:mod:`mdagent.session.session_commands`);
- ``/name args``: a declared command, run as ``agent /name args`` would run it
  (:mod:`mdagent.runtime.person`: a tool command through the toolbox as a person; a
  prompt skill as an agent turn in this session);
- anything else: a chat turn with the model, in one conversation.

On a terminal lines come from a prompt_toolkit prompt (:mod:`mdagent.session.lineinput`:
multi-line paste, history per workspace, a completion menu) and answers are
rendered as Markdown (:mod:`mdagent.ui.render`); piped stdin works the same,
line by line, without prompts or colour. Declarations changed on disk are
picked up before the next line (:meth:`Repl.reload`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from mdagent.core.errors import Interrupted, MdagentError, UsageError
from mdagent.core.signals import Terminated, received
from mdagent.session.commands import Commands
from mdagent.session.session_commands import SHELL_CONTEXT_CHARS, EmptyInterrupt, Exit
from mdagent.ui.console import is_terminal

if TYPE_CHECKING:
    from mdagent.agent.conversation import Conversation
    from mdagent.providers.config import Provider, ProviderConfig
    from mdagent.ui.display import Display

BANNER = "mdagent — /help for commands, /exit to leave"
#: The banner in fewer columns, longest first: a narrow terminal gets the one that fits.
SHORT_BANNERS = ("mdagent — /help, /exit", "mdagent")


def banner(width: int | None) -> str:
    """The session's first line, in a form that fits ``width`` columns (None: the whole)."""
    for text in (BANNER, *SHORT_BANNERS):
        if width is None or len(text) <= width:
            return text
    return SHORT_BANNERS[-1]


class Repl:
    """One interactive session over a :class:`~mdagent.runtime.runtime.Runtime`.

    The provider and the session in the store are created on the first chat
    turn, so ``/tools`` or ``/help`` work without a model configured.
    ``continue_`` opens on the latest conversation of this workspace.
    """

    def __init__(self, runtime: Any, *, continue_: bool = False) -> None:
        from mdagent.session.session_commands import register_builtins

        self.runtime = runtime
        self.commands = Commands()
        self.interactive = False
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        self.skills_used: list[str] = []  # prompt skills run with /name in this conversation
        self.shell_mode = False  # `!` alone: each line is a command until Esc or `!`
        self._provider: Provider | None = None
        self._config: ProviderConfig | None = None
        self._conversation: Conversation | None = None
        self._person_box: Any = None
        self._model_box: Any = None
        self._shown_problems: set[tuple[Any, ...]] = set()
        self._fingerprint: Any = None
        register_builtins(self)
        if continue_:
            try:
                self.resume(None)
            except UsageError:
                self.warn("no session to continue in this workspace; starting a new one")

    @staticmethod
    def say(text: str) -> None:
        """Print a line for the person."""
        print(text, flush=True)

    @staticmethod
    def warn(text: str) -> None:
        """Print ``agent: text`` on stderr, yellow on a colour terminal."""
        from mdagent.ui.console import paint

        print(paint(f"agent: {text}", "yellow", sys.stderr), file=sys.stderr, flush=True)

    # -- names ------------------------------------------------------------------

    def command_names(self) -> list[tuple[str, str]]:
        """``(/name, description)`` of the session's commands and the declared ones."""
        own = dict(self.commands)
        declared = {
            f"/{key}": c.description
            for key, c in self.runtime.registry.commands.items()
            if c.user_invocable
        }
        return sorted({**declared, **own}.items())

    def completions(self) -> list[str]:
        """Every ``/name`` a line may start with."""
        return [name for name, _ in self.command_names()]

    def argument_completions(self, line: str, partial: str) -> list[str]:
        """Completions of ``partial`` as an argument of the ``/name`` that starts ``line``."""
        from mdagent.tools.dispatch import complete_argument

        first = line.lstrip().split(" ", 1)[0]
        if not first.startswith("/"):
            return []
        own = self.commands.completions_for(first, partial)
        if first in self.commands:
            return own
        command = self.runtime.registry.command(first)
        if command is None:
            return []
        found = complete_argument(command, partial, cwd=str(self.runtime.cwd))
        return found + self._option_completions(command, partial)

    def _option_completions(self, command: Any, partial: str) -> list[str]:
        """``--param`` of a parsed command's optional parameters, and a parameter's choices."""
        if command.kind != "tool" or command.arg_mode != "parsed" or not command.tool:
            return []
        spec = self.runtime.registry.tool(command.tool)
        if spec is None:
            return []
        if partial.startswith("-"):
            return [f"--{p}" for p in spec.params if f"--{p}".startswith(partial)]
        choices: list[str] = []
        for schema in spec.params.values():
            choices += [str(c) for c in schema.get("enum") or () if str(c).startswith(partial)]
        return choices

    def unknown(self, name: str) -> str:
        """The unknown-command message: why, the nearest name (built-ins included)."""
        from mdagent.core.names import closest
        from mdagent.core.specs import command_key
        from mdagent.runtime.person import SUBCOMMANDS, broken_declaration, unknown_command

        key = command_key(name)
        broken = broken_declaration(self.runtime.registry, key)
        if broken is not None:
            return broken  # known, and broken: where and why, not "unknown"
        first = unknown_command(self.runtime.registry, key).splitlines()[0]
        near = closest(key, [n[1:] for n in self.completions()], prefix=True)
        if near is not None:
            hint = f"did you mean /{near}? "
        elif key in SUBCOMMANDS:  # `/doctor` typed here: it is a shell subcommand
            hint = f"did you mean `agent {key}` (at the shell)? "
        else:
            hint = ""
        return f"{first}\n{hint}(/help lists the commands)"

    # -- lazily built parts -------------------------------------------------------

    def config(self) -> ProviderConfig:
        """The provider configuration (agent.yaml, flags, environment)."""
        if self._config is None:
            import os

            from mdagent.providers import ProviderConfig

            self._config = ProviderConfig.from_settings(
                self.runtime.settings, self.runtime.options.model_overrides, os.environ
            )
        return self._config

    def provider(self) -> Provider:
        """The model's provider, made on first use."""
        if self._provider is None:
            from mdagent.agent.ask import require_key
            from mdagent.providers import get_provider

            require_key(self.config())  # before any request: say how to configure one
            self._provider = get_provider(self.config())
        return self._provider

    def require_hosted_key(self) -> None:
        """Refuse to open without the key the provider's own endpoint needs (exit 2).

        Only at the provider's default host (api.openai.com, api.anthropic.com):
        a local or other server may need no key, and is asked on the first turn.
        """
        from mdagent.core.errors import ConfigError
        from mdagent.providers.config import DEFAULTS
        from mdagent.runtime.init import missing_key

        try:
            config = self.config()
        except ConfigError:
            return  # a broken setting is reported when a turn needs it
        defaults = DEFAULTS.get(config.provider)
        if defaults is None:
            return
        hosted = (config.base_url or defaults["base_url"]).rstrip("/") == defaults[
            "base_url"
        ].rstrip("/")
        import os

        problem = missing_key(config, os.environ) if hosted else None
        if problem:
            raise ConfigError(problem)

    def drop_provider(self) -> None:
        """Forget the provider and its configuration (the model or the settings changed)."""
        close = getattr(self._provider, "close", None)
        if callable(close):
            close()
        self._provider = self._config = None

    @property
    def session_id(self) -> str | None:
        """The id of the conversation in the store, once it has one."""
        return self._conversation.session_id if self._conversation is not None else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation so far (empty before the first turn)."""
        return self._conversation.messages if self._conversation is not None else []

    def conversation(self) -> Conversation:
        """The conversation, started in the store on the first turn."""
        if self._conversation is None:
            from mdagent.agent.conversation import Conversation

            self._conversation = Conversation.start(
                self.runtime.store, cwd=str(self.runtime.workdir), model=self.config().model
            )
        return self._conversation

    def new_conversation(self, conversation: Conversation | None = None) -> None:
        """Switch to ``conversation`` (None: a fresh one on the next turn)."""
        self._conversation = conversation
        # "Yes for this session" ends with the session (/clear, /resume).
        self.runtime.session_approvals.clear()
        self.usage = {"input_tokens": 0, "output_tokens": 0}
        self.skills_used = []

    def resume(self, id_or_prefix: str | None) -> Conversation:
        """Open a stored conversation of this workspace (None: the latest); UsageError if none."""
        from mdagent.agent.conversation import Conversation

        store = self.runtime.store
        if id_or_prefix:
            found = store.session(id_or_prefix)
            if found is None:
                raise UsageError(f"no session {id_or_prefix!r} (see /sessions)")
            session_id = found["id"]
        else:
            session_id = store.latest_session(str(self.runtime.workdir))
            if session_id is None:
                raise UsageError("no earlier session in this workspace")
        conversation = Conversation.resume(store, session_id)
        usage = self.usage  # the tokens this session spent stay counted
        self.new_conversation(conversation)
        self.usage = usage
        return conversation

    def set_mode(self, mode: str) -> None:
        """Switch the permission mode for the rest of the session (``/mode``, Shift+Tab).

        The toolboxes are built anew: their policy reads the mode when made
        (:func:`mdagent.safety.modes.effective_mode`). A word that is not a mode is a
        :class:`UsageError`.
        """
        from mdagent.safety.modes import MODES

        if mode not in MODES:
            raise UsageError(f"/mode: {mode!r} is not one of {', '.join(MODES)}")
        options = self.runtime.options
        options.mode, options.mode_source = mode, "/mode"
        self._person_box = self._model_box = None

    def cycle_mode(self) -> str:
        """The next mode of :data:`mdagent.safety.modes.CYCLE` (Shift+Tab); returns it."""
        from mdagent.safety.modes import CYCLE

        current = self.runtime.mode.mode
        following = CYCLE[(CYCLE.index(current) + 1) % len(CYCLE)] if current in CYCLE else CYCLE[0]
        self.set_mode(following)
        return following

    def person_box(self) -> Any:
        """The toolbox for commands the person types (caller "person")."""
        if self._person_box is None:
            # As on the command line: only deny rules and rate limits apply.
            self._person_box = self.runtime.toolbox(policy=self.runtime.person_policy())
        return self._person_box

    def display(self) -> Display:
        """How a turn is shown: Markdown on a terminal, plain text otherwise."""
        if self.interactive and is_terminal(sys.stdout):
            from mdagent.ui.render import MarkdownDisplay

            return MarkdownDisplay()
        from mdagent.ui.display import Display

        return Display()

    # -- hot reload ---------------------------------------------------------------

    def reload(self, force: bool = False) -> bool:
        """Pick up declarations and skills changed on disk; whether anything changed.

        The registry cache compares each watched file's size and mtime (as on
        every ``agent /name``); a changed registry replaces the runtime's, and
        the toolboxes built from the old one are dropped. ``force`` (``/reload``)
        also finds the layers again (a new ``.agents/`` folder). A broken
        file's problem is shown once, as ``path:line:col``; the rest works.
        """
        from mdagent.registry.registry import load_registry

        runtime = self.runtime
        if force:
            runtime.__dict__.pop("layers", None)
        registry = load_registry(runtime.layers)
        fingerprint = _fingerprint(registry)
        changed = force or fingerprint != self._fingerprint
        if changed:
            runtime.use_registry(registry)  # settings, trust and what derives from them anew
        changed = runtime.trust_moved() or changed  # a covered file edited: trust judged again
        if changed:
            self._person_box = self._model_box = None
            if self._config is not None and self._config != _config_of(runtime):
                self.drop_provider()
        self._fingerprint = fingerprint
        self.show_problems()
        return changed

    def show_problems(self) -> None:
        """Each error or warning of the registry, once per session."""
        for problem in self.runtime.registry.problems:
            if problem.severity in ("error", "warning") and problem not in self._shown_problems:
                self._shown_problems.add(problem)
                self.warn(str(problem))

    # -- lines --------------------------------------------------------------------

    def handle(self, line: str) -> None:
        """Act on one line (or pasted block); raises :class:`Exit` to leave."""
        text = line.strip()
        if not text:
            return
        if text == "!":
            self.shell_mode = not self.shell_mode
            self.say(
                "(shell mode: each line is a command; Esc leaves)"
                if self.shell_mode
                else "(shell mode off)"
            )
            return
        if self.shell_mode or text.startswith("!"):
            self.shell(text.removeprefix("!").strip())
            return
        if text.startswith("/") and len(text) > 1 and "\n" not in text.split(" ", 1)[0]:
            name, _, rest = text[1:].partition(" ")
            rest = rest.strip()
            if self.commands.run(name, rest or None):
                return
            self.declared(name, rest)
            return
        from mdagent.agent.mentions import with_mentions

        self.chat({"role": "user", "content": with_mentions(self.runtime, text)})

    def chat(
        self,
        message: dict[str, Any],
        allow: list[str] | None = None,
        without: Any = (),
        max_steps: int | None = None,
    ) -> None:
        """One agent turn in this session.

        ``allow``: extra allow rules for this turn; ``without``: tools not
        offered; ``max_steps``: its step limit (a prompt skill's settings).
        """
        from mdagent.agent.ask import build_agent

        self.runtime.check_settings()  # a half-read policy is not a policy
        box = None
        if not allow:
            if self._model_box is None:
                # One policy for the session: an "always" answer holds until /exit
                # (and is saved to agent.yaml, which the next reload reads).
                # No session id: the audit log takes each call's conversation id.
                self._model_box = self.runtime.toolbox(policy=self.runtime.policy())
            box = self._model_box
        agent = build_agent(
            self.runtime,
            self.provider(),
            self.conversation(),
            allow=allow or (),
            toolbox=box,
            display=self.display(),
            without=without,
            max_steps=max_steps,
        )
        try:
            outcome = agent.run(message)
        finally:
            for key in self.usage:
                self.usage[key] += agent.usage.get(key, 0)
        if outcome.message:
            self.warn(outcome.message)

    def shell(self, command: str) -> None:
        """``!command``: run it as a command the person typed; its output joins the conversation.

        It runs through the person's toolbox (the person's policy: deny rules
        and rate limits; the sandbox only with ``sandbox.applies_to: all``),
        its output shown live. The command, its exit status and its output
        (capped at :data:`SHELL_CONTEXT_CHARS`) are added to the conversation
        as the person's message: the model reads them with the next one.
        """
        if not command:
            return
        self.runtime.check_settings()
        box = self.person_box()
        live = sys.stdout if is_terminal(sys.stdout) else _Echo(sys.stdout)
        ctx = self.runtime.context(box, caller="person", output=live)
        result = box.run("exec", {"command": command}, ctx)
        data = result.data
        code = data.get("exit_code")
        if not isinstance(code, int):
            self.warn(f"not run: {result.error or 'refused'}")  # refused, or could not start
            return
        if not result.ok:
            self.warn(str(result.error))  # exit status N, timed out, interrupted
        self.conversation().add({"role": "user", "content": shell_context(command, data)})
        self.say(_dim("(the model sees this with your next message)"))

    def open_last(self) -> None:
        """Ctrl-O: the last call's whole result, then the conversation, in the pager."""
        from mdagent.ui.transcript import conversation_text, last_call_text

        messages = self.messages
        if not messages:
            self.say("(nothing to show yet)")
            return
        last = last_call_text(messages)
        parts = [f"Last call:\n{last}"] if last else ["(no tool call yet)"]
        parts.append(f"Conversation (session {self.session_id}):\n\n{conversation_text(messages)}")
        page("\n\n".join(parts) + "\n")

    def declared(self, name: str, rest: str) -> None:
        """Run ``/name rest`` from the registry, as the CLI would."""
        from mdagent.runtime.person import (
            HELP_WORDS,
            command_help,
            resolve_command,
            run_tool_command,
        )

        registry = self.runtime.registry
        if ":" in name and registry.settings.get("mcp_servers"):
            import shlex

            from mdagent.agent.ask import run_server_prompt
            from mdagent.mcp.mcptools import prompt_target

            target = prompt_target(self.runtime, name)  # `/server:prompt` of an MCP server
            if target is not None:
                words = shlex.split(rest)
                help_or_words = ["--help"] if words in HELP_WORDS else words
                run_server_prompt(self.runtime, *target, help_or_words)
                return
        command = registry.command(name)
        if command is None or not command.user_invocable:
            raise UsageError(self.unknown(name))
        if rest.split() in HELP_WORDS:  # `/name -h` as at the shell: help, not a run
            self.say(command_help(self.runtime, name))
            return
        command, tool_spec = resolve_command(self.runtime, name)
        self.runtime.check_settings()
        if command.kind == "prompt":
            from mdagent.agent.ask import prompt_skill, skill_message, skill_turn

            skill = prompt_skill(self.runtime, command)
            if skill.name not in self.skills_used:
                self.skills_used.append(skill.name)
            if skill.context == "fork" or skill.model:
                # A fork, or a model of its own, is a turn of its own: run it
                # as `agent /name` does; its answer is shown here.
                import shlex

                from mdagent.agent.ask import run_prompt_skill

                try:
                    words = shlex.split(rest)
                except ValueError:
                    words = [rest] if rest else []
                run_prompt_skill(self.runtime, command, words)
                return
            # The person typed it: the body's !`cmd` run as the person's calls.
            ctx = self.runtime.context(self.person_box(), caller="person")
            self.chat(skill_message(skill, rest, ctx), **skill_turn(skill))
            return
        from mdagent.agent.skillrunner import SkillRunner

        run_tool_command(
            self.runtime,
            command,
            tool_spec,
            text=rest,
            box=self.person_box(),
            skill_runner=SkillRunner(),
        )

    # -- the loop -----------------------------------------------------------------

    def run(self) -> int:
        """Read lines until EOF, ``/exit``, ``/quit`` or two Ctrl-C; returns 0."""
        self.interactive = is_terminal(sys.stdin)
        self.runtime.check_settings()
        self.reload()
        if self.interactive:
            self.require_hosted_key()
            from mdagent.session.lineinput import TerminalInput
            from mdagent.ui.console import terminal_width

            reader: Any = TerminalInput(self)
            self.say(banner(terminal_width()))
            if self.session_id:
                self.say(f"(continuing session {self.session_id}: {len(self.messages)} messages)")
        else:
            reader = PipedInput()
        interrupted = False  # the last prompt ended with Ctrl-C on an empty line
        try:
            while True:
                try:
                    line = reader.read()
                except EOFError:
                    if self.interactive:
                        self.say("")
                    return 0
                except Terminated:
                    raise  # SIGTERM/SIGHUP end the session (mdagent.core.signals)
                except (EmptyInterrupt, KeyboardInterrupt) as stop:
                    # A SIGINT (not a key read by the prompt) comes while no prompt
                    # reads the keys: piped input, or a second Ctrl-C pressed before
                    # the next prompt is up. After a first Ctrl-C it counts as the second.
                    if interrupted:
                        return 0
                    interrupted = isinstance(stop, EmptyInterrupt) or self.interactive
                    try:
                        self.say("(Ctrl-C again or Ctrl-D to leave)" if interrupted else "")
                    except Terminated:
                        raise
                    except KeyboardInterrupt:
                        return 0
                    continue
                interrupted = False
                if not self.step(line):
                    return 0
        finally:
            self.drop_provider()

    def step(self, line: str) -> bool:
        """Reload if needed, then act on ``line``; False when the session ends."""
        try:
            self.reload()
            self.handle(line)
        except Exit:
            return False
        except (KeyboardInterrupt, Interrupted):
            if received() is not None:  # SIGTERM/SIGHUP: end, do not read on
                raise
            where = f" (session {self.session_id} is saved)" if self.session_id else ""
            self.warn(f"interrupted{where}")
        except MdagentError as err:
            self.warn(str(err))
        return True


def page(text: str) -> None:
    """Show ``text`` in the person's pager (``$PAGER``, else ``less -R``), or print it."""
    import os
    import shlex
    import shutil
    import subprocess

    argv = shlex.split(os.environ.get("PAGER") or "") or (
        ["less", "-R"] if shutil.which("less") else []
    )
    if not argv or not is_terminal(sys.stdout):
        print(text, end="", flush=True)
        return
    try:
        subprocess.run(argv, input=text.encode("utf-8", errors="replace"), check=False)
    except OSError as err:
        print(f"agent: cannot start the pager {argv[0]}: {err.strerror or err}", file=sys.stderr)
        print(text, end="", flush=True)


def shell_context(command: str, data: dict[str, Any]) -> str:
    """What the model reads of a ``!command``: the command, its status, its (capped) output."""
    from mdagent.agent.conversation import capped

    parts = []
    for stream in ("stdout", "stderr"):
        text = str(data.get(stream) or "").rstrip("\n")
        if text:
            label = "" if stream == "stdout" else " (stderr)"
            parts.append(f"Output{label}:\n```\n{text}\n```")
    status = data.get("exit_code")
    how = "timed out" if data.get("timed_out") else f"exit status {status}"
    body = "\n".join(parts) or "(no output)"
    return capped(
        f"I ran this command in the shell myself: `{command}` ({how}).\n{body}",
        SHELL_CONTEXT_CHARS,
    )


class _Echo:
    """A watcher without a file descriptor: a child's output is captured and echoed as text.

    (Given a pipe or a file, a person's command would write to it directly and
    keep nothing for the conversation.)
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()


def _dim(text: str) -> str:
    from mdagent.ui.console import paint

    return paint(text, "dim")


class PipedInput:
    """Lines from piped stdin, one message each; no prompt, no history."""

    def read(self) -> str:
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line.rstrip("\n")


def _fingerprint(registry: Any) -> Any:
    """What a reload compares: the compiled registry, and each skill's name and description."""
    import json

    skills = [(name, getattr(s, "description", "")) for name, s in registry.skills.items()]
    return json.dumps([registry.to_dict(), skills], sort_keys=True, default=str)


def _config_of(runtime: Any) -> Any:
    import os

    from mdagent.core.errors import ConfigError
    from mdagent.providers import ProviderConfig

    try:
        return ProviderConfig.from_settings(
            runtime.settings, runtime.options.model_overrides, os.environ
        )
    except ConfigError:
        return None


def run_repl(runtime: Any, *, continue_: bool = False) -> int:
    """``agent`` with no subcommand: the interactive session; returns the exit status."""
    return Repl(runtime, continue_=continue_).run()
