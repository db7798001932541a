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
from mdagent.console import described, is_terminal
from mdagent.errors import Interrupted, MdagentError
from mdagent.signals import Terminated, received

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
            self.say(described((t["name"], t["description"]) for t in tools) or "(no tools)")

        @register("skills", "List the skills")
        def _skills(_: str | None) -> None:
            skills = self.runtime.registry.skills.values()
            self.say(described((s.name, s.description) for s in skills) or "(no skills)")

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

        own = described(self.commands)
        declared = command_listing(self.runtime.registry)
        return f"{own}\n{declared}\nAnything else is a message to the model."

    def argument_completions(self, line: str, partial: str) -> list[str]:
        """Completions of ``partial`` as an argument of the ``/name`` that starts ``line``."""
        from mdagent.dispatch import complete_argument

        first = line.lstrip().split(" ", 1)[0]
        if not first.startswith("/"):
            return []
        own = self.commands.completions_for(first, partial)
        command = self.runtime.registry.command(first)
        declared = complete_argument(command, partial) if command is not None else []
        return own or declared

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
        from mdagent.cli import resolve_command, run_tool_command

        command, tool_spec = resolve_command(self.runtime, name)
        if command.kind == "prompt":
            from mdagent.agent import prompt_skill, skill_allow_rules, skill_message

            skill = prompt_skill(self.runtime, command)
            self.chat(skill_message(skill, rest), allow=skill_allow_rules(skill))
            return
        run_tool_command(self.runtime, command, tool_spec, text=rest, box=self.person_box())

    # -- the loop --

    def run(self) -> int:
        """Read lines until EOF, ``/exit`` or ``/quit``; returns 0."""
        self.runtime.check_settings()  # a half-read policy is not a policy
        interactive = is_terminal(sys.stdin)
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
                except Terminated:
                    raise  # SIGTERM/SIGHUP end the session (mdagent.signals)
                except KeyboardInterrupt:
                    self.say("")  # Ctrl-C at the prompt drops the line, like a shell
                    continue
                try:
                    self.handle(line)
                except Exit:
                    return 0
                except (KeyboardInterrupt, Interrupted):
                    if received() is not None:  # SIGTERM/SIGHUP: end, do not read on
                        raise
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
            line = readline.get_line_buffer()
            if text.startswith("/") and " " not in line.lstrip():
                matches = [n for n in names if n.startswith(text)]
            else:  # an argument of /name: its declared completions
                matches = self.argument_completions(line, text)
            return matches[state] if state < len(matches) else None

        readline.set_completer(complete)
        readline.set_completer_delims(" \t\n")
        readline.parse_and_bind("tab: complete")


def run_repl(runtime: Any) -> int:
    """``agent`` with no subcommand: the interactive session; returns the exit status."""
    return Repl(runtime).run()
