"""``agent`` with no subcommand: a small interactive session.

Each line is one of

- ``/help``, ``/exit``, ``/quit``, ``/tools``, ``/skills``, ``/clear``, ``/model``:
  the session's own commands;
- ``/name args``: a declared command, run as ``agent /name args`` would run it
  (a tool command through the toolbox as a person; a prompt skill as an agent
  turn in this session);
- anything else: a chat turn with the model, in one session.

Lines come from :func:`input`, with readline completion of ``/`` commands when
stdin is a terminal; piped stdin works the same, without prompts.
"""

from __future__ import annotations

import sys
from typing import Any

from mdagent.commands import Commands
from mdagent.errors import Interrupted, MdagentError, UsageError

PROMPT = "› "


class Exit(Exception):
    """``/exit`` or ``/quit``: leave the session."""


class Repl:
    """One interactive session over a :class:`~mdagent.runtime.Runtime`.

    The provider and the session in the store are created on the first chat
    turn, so ``/tools`` or ``/help`` work without a model configured.
    """

    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.commands = Commands()
        self._provider: Any = None
        self._config: Any = None
        self._conversation: Any = None
        self._person_box: Any = None
        self._model_box: Any = None
        self._register()

    @staticmethod
    def say(text: str) -> None:
        """Print a line for the person."""
        print(text, flush=True)

    # -- the session's own commands --

    def _register(self) -> None:
        register = self.commands.register

        @register("help", "List the commands")
        def _help(_: str | None) -> None:
            self.say(self.help_text())

        @register("exit", "Leave the session")
        def _exit(_: str | None) -> None:
            raise Exit

        @register("quit", "Leave the session")
        def _quit(_: str | None) -> None:
            raise Exit

        @register("tools", "List the tools the model gets")
        def _tools(_: str | None) -> None:
            from mdagent.agent import model_tools

            box = self.person_box()
            tools = model_tools(box, self.runtime.settings)
            self.say(_rows((t["name"], t["description"]) for t in tools) or "(no tools)")

        @register("skills", "List the skills")
        def _skills(_: str | None) -> None:
            skills = self.runtime.registry.skills.values()
            self.say(_rows((s.name, s.description) for s in skills) or "(no skills)")

        @register("clear", "Start a new session")
        def _clear(_: str | None) -> None:
            self._conversation = None
            self.say("(new session)")

        @register("model", "Show the provider and model")
        def _model(_: str | None) -> None:
            config = self.config()
            where = f" at {config.base_url}" if config.base_url else ""
            self.say(f"{config.provider} {config.model}{where}")

    def help_text(self) -> str:
        """The session's commands, then the declared ones."""
        from mdagent.cli import command_listing

        own = _rows(self.commands)
        declared = command_listing(self.runtime.registry)
        return f"{own}\n{declared}\nAnything else is a message to the model."

    def completions(self) -> list[str]:
        """Every ``/name`` a line may start with."""
        declared = [
            f"/{key}" for key, c in self.runtime.registry.commands.items() if c.user_invocable
        ]
        return sorted({*self.commands.names(), *declared})

    # -- lazily built parts --

    def config(self) -> Any:
        """The provider configuration (agent.yaml, flags, environment)."""
        if self._config is None:
            import os

            from mdagent.providers import ProviderConfig

            self._config = ProviderConfig.from_settings(
                self.runtime.settings, self.runtime.options.model_overrides, os.environ
            )
        return self._config

    def provider(self) -> Any:
        if self._provider is None:
            from mdagent.providers import get_provider

            self._provider = get_provider(self.config())
        return self._provider

    def conversation(self) -> Any:
        if self._conversation is None:
            from mdagent.agent import Conversation

            self._conversation = Conversation.start(
                self.runtime.store, cwd=str(self.runtime.workdir), model=self.config().model
            )
        return self._conversation

    def person_box(self) -> Any:
        """The toolbox for commands the person types (caller "person")."""
        if self._person_box is None:
            # As on the command line: only deny rules and rate limits apply.
            self._person_box = self.runtime.toolbox(policy=self.runtime.person_policy())
        return self._person_box

    # -- lines --

    def handle(self, line: str) -> None:
        """Act on one line; raises :class:`Exit` to leave."""
        line = line.strip()
        if not line:
            return
        if line.startswith("/") and len(line) > 1:
            name, _, rest = line[1:].partition(" ")
            rest = rest.strip()
            if self.commands.run(name, rest or None):
                return
            self.declared(name, rest)
            return
        self.chat({"role": "user", "content": line})

    def chat(self, message: dict[str, Any], allow: list[str] | None = None) -> None:
        """One agent turn in this session (``allow``: extra allow rules for this turn)."""
        from mdagent.agent import build_agent

        box = None
        if not allow:
            if self._model_box is None:
                # One policy for the session: an "always" answer holds until /exit.
                # No session id: the audit log takes each call's conversation id.
                self._model_box = self.runtime.toolbox(policy=self.runtime.policy())
            box = self._model_box
        agent = build_agent(
            self.runtime, self.provider(), self.conversation(), allow=allow or (), toolbox=box
        )
        outcome = agent.run(message)
        if outcome.message:
            print(f"agent: {outcome.message}", file=sys.stderr, flush=True)

    def declared(self, name: str, rest: str) -> None:
        """Run ``/name rest`` from the registry, as the CLI would."""
        from mdagent.cli import render, unknown_command
        from mdagent.dispatch import build_call, usage

        registry = self.runtime.registry
        command = registry.command(name)
        if command is None or not command.user_invocable:
            raise UsageError(unknown_command(registry, name))
        if command.kind == "prompt":
            from mdagent.agent import prompt_skill, skill_allow_rules, skill_message

            skill = prompt_skill(self.runtime, command)
            self.chat(skill_message(skill, rest), allow=skill_allow_rules(skill))
            return
        tool_spec = registry.tool(command.tool) if command.tool else None
        if tool_spec is None:
            raise UsageError(f"/{command.name}: its tool {command.tool!r} does not exist")
        reason = self.runtime.unavailable(tool_spec)
        if reason:
            raise UsageError(f"/{command.name} is unavailable: {reason}")
        call = build_call(command, tool_spec, text=rest)
        box = self.person_box()
        problems = box.tool_for(call.tool).validate(call.args)
        if problems:
            raise UsageError(f"/{command.name}: {', '.join(problems)}\n{usage(command, tool_spec)}")
        ctx = self.runtime.context(box, caller="person", output=sys.stdout)
        render(box.run(call.tool, call.args, ctx), as_json=False, label=f"/{command.name}")

    # -- the loop --

    def run(self) -> int:
        """Read lines until EOF, ``/exit`` or ``/quit``; returns 0."""
        self.runtime.check_settings()  # a half-read policy is not a policy
        interactive = _is_terminal(sys.stdin)
        if interactive:
            self._install_completion()
            self.say("mdagent — /help for commands, /exit to leave")
        try:
            while True:
                try:
                    line = input(PROMPT if interactive else "")
                except EOFError:
                    if interactive:
                        self.say("")
                    return 0
                except KeyboardInterrupt:
                    self.say("")  # Ctrl-C at the prompt drops the line, like a shell
                    continue
                try:
                    self.handle(line)
                except Exit:
                    return 0
                except (KeyboardInterrupt, Interrupted):
                    print("agent: interrupted", file=sys.stderr, flush=True)
                except MdagentError as err:
                    print(f"agent: {err}", file=sys.stderr, flush=True)
        finally:
            close = getattr(self._provider, "close", None)
            if callable(close):
                close()

    def _install_completion(self) -> None:
        try:
            import readline
        except ImportError:  # not on every platform; completion is a nicety
            return
        names = self.completions()

        def complete(text: str, state: int) -> str | None:
            matches = [n for n in names if n.startswith(text)] if text.startswith("/") else []
            return matches[state] if state < len(matches) else None

        readline.set_completer(complete)
        readline.set_completer_delims(" \t\n")
        readline.parse_and_bind("tab: complete")


def run_repl(runtime: Any) -> int:
    """``agent`` with no subcommand: the interactive session; returns the exit status."""
    return Repl(runtime).run()


def _rows(pairs: Any) -> str:
    pairs = [(str(a), _first_line(b)) for a, b in pairs]
    width = max((len(a) for a, _ in pairs), default=0)
    return "\n".join(f"{a:<{width}}  {b}" for a, b in pairs)


def _first_line(text: str | None, limit: int = 80) -> str:
    lines = (text or "").strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
