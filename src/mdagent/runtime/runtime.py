"""One process's view of the world: options, layers, registry, toolbox, policy, store.

The CLI fast path, ``agent ask`` and the interactive session all build a
:class:`Runtime` and run calls through its toolbox, so every caller gets the
same validation, policy, hooks and audit log.

The runtime also decides workspace trust (:mod:`mdagent.runtime.trust`): in a
workspace the person has not trusted, :attr:`Runtime.registry` is the view
that only tightens, so the policy, hooks, MCP servers and the model settings
all read what an untrusted folder is allowed, and nothing else needs to know.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

from mdagent.core.calls import ToolContext
from mdagent.core.errors import ConfigError, Problem
from mdagent.core.layers import find_layers, project_layer, project_root
from mdagent.core.specs import ToolSpec, unmet_requirement
from mdagent.registry.model import Registry
from mdagent.registry.registry import load_registry
from mdagent.tools.toolbox import Toolbox

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any, TextIO


class Options:
    """Global options, wherever they were given on the command line."""

    # A plain class, not a dataclass: importing dataclasses costs ~4 ms of
    # every `agent /name`, which builds one of these.
    def __init__(
        self,
        layers: list[str] | None = None,
        no_user: bool = False,
        json: bool = False,
        yes: bool = False,
        verbose: bool = False,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        script: str | None = None,
        output_format: str = "text",
        mode: str | None = None,
    ) -> None:
        self.layers: list[str] = [] if layers is None else layers
        self.no_user = no_user
        self.json = json or output_format == "json"  # `--output-format json` is `--json`
        self.yes = yes
        self.verbose = verbose
        self.provider = provider
        self.model = model
        self.base_url = base_url
        self.script = script
        #: ``text``, ``json`` (also ``--json``) or ``stream-json`` (:mod:`mdagent.ui.events`).
        self.output_format = "json" if json and output_format == "text" else output_format
        #: The permission mode asked for on the command line or by ``/mode``
        #: (None: the settings' ``policy.mode``); see :func:`mdagent.safety.modes.effective_mode`.
        self.mode = mode
        self.mode_source = "--mode" if mode else None
        #: This run's own rules and limits (``agent ask``): never written to a file.
        self.allow: list[str] = []
        self.deny: list[str] = []
        self.max_steps: int | None = None
        self.tools: list[str] | None = None
        self.system_prompt: str | None = None
        self.append_system_prompt: str | None = None
        self.fail_on_refusal = False

    @property
    def stream_json(self) -> bool:
        """Whether stdout carries one JSON event per line (``--output-format stream-json``)."""
        return self.output_format == "stream-json"

    def copy(self) -> Options:
        """A copy whose lists are its own."""
        twin = Options.__new__(Options)
        twin.__dict__.update(
            {k: list(v) if isinstance(v, list) else v for k, v in vars(self).items()}
        )
        return twin

    def __repr__(self) -> str:
        return f"Options({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"

    def __eq__(self, other: object) -> bool:
        return type(other) is Options and vars(self) == vars(other)

    @property
    def model_overrides(self) -> dict[str, str | None]:
        """Command-line choices of provider and model (None: not given)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "base_url": self.base_url,
            "script": self.script,
        }


#: What ``--output-format`` takes.
OUTPUT_FORMATS = ("text", "json", "stream-json")


def check_run_options(options: Options) -> Options:
    """``options``, or a :class:`UsageError` for an ``--output-format`` or ``--mode`` it cannot take."""
    from mdagent.core.errors import UsageError

    if options.output_format not in OUTPUT_FORMATS:
        raise UsageError(
            f"--output-format: {options.output_format!r} is not one of {', '.join(OUTPUT_FORMATS)}"
        )
    if options.mode is not None:
        from mdagent.safety.modes import MODES

        if options.mode not in MODES:
            raise UsageError(f"--mode: {options.mode!r} is not one of {', '.join(MODES)}")
    return options


class Runtime:
    """Everything a call needs, built lazily so ``/name`` pays only for what it uses."""

    def __init__(self, options: Options | None = None, cwd: Path | None = None) -> None:
        self.options = options or Options()
        self.cwd = (cwd or Path.cwd()).resolve()
        #: Tell the person once when the workspace is not trusted (and ask at a
        #: terminal when trust lapsed); off for what reports trust itself
        #: (agent check, agent trust, agent config show, agent doctor).
        self.trust_notice = True
        #: The calls answered "yes for this session" (:class:`mdagent.safety.policy.Policy`
        #: ``session``): every policy of this session shares them, so they
        #: outlive a reload or ``/mode``; a new session starts without any.
        self.session_approvals: set[str] = set()

    @cached_property
    def layers(self):
        return find_layers(self.options.layers, no_user=self.options.no_user, cwd=self.cwd)

    @cached_property
    def compiled(self) -> Registry:
        """Every layer compiled as written, before trust is applied (see :attr:`registry`)."""
        return load_registry(self.layers)

    @cached_property
    def registry(self) -> Registry:
        """The registry as this workspace may use it: compiled, or its untrusted view."""
        if self.trusted:
            return self.compiled
        from mdagent.runtime.trust import UntrustedRegistry

        return UntrustedRegistry(self.compiled)  # type: ignore[return-value]

    @property
    def trusted(self) -> bool:
        """Whether the workspace's own layers may act: trusted, or holding nothing trust covers.

        Free for a workspace with nothing trust covers: only the registry's
        cached facts are read.
        """
        facts = self.compiled.trust
        if not facts or not facts.get("items"):
            return True
        return self.trust.trusted

    @cached_property
    def trust(self):
        """The workspace's :class:`mdagent.runtime.trust.TrustState`, told (or asked) once per process."""
        from mdagent.runtime.trust import evaluate

        state = evaluate(self.compiled.trust)
        if state.needed and not state.trusted and self.trust_notice:
            state = self._tell_untrusted(state)
        return state

    def _tell_untrusted(self, state):
        """One line on stderr; when trust lapsed and a person sits at a terminal, ask at once."""
        import sys

        from mdagent.runtime.trust import notice, question, snapshot, tell

        if state.lapsed and sys.stdin.isatty() and sys.stderr.isatty():
            sys.stderr.write(f"agent: {question(state)}")
            sys.stderr.flush()
            if sys.stdin.readline().strip().lower() in ("y", "yes"):
                snapshot(self.compiled.trust).write()
                tell("trusted this folder as it is now")
                return state._replace(trusted=True, changes=[])
        tell(notice(state))
        return state

    def use_registry(self, compiled: Registry) -> None:
        """Carry on with ``compiled`` (a session's reload): trust is judged again if it moved."""
        before = self.__dict__.get("compiled")
        self.__dict__["compiled"] = compiled
        derived = ["registry", "env", "project_layer"]  # built from the old one
        if before is None or before.trust != compiled.trust:
            derived.append("trust")  # what trust covers changed: judged (and told) again
        for name in derived:
            self.__dict__.pop(name, None)

    def trust_moved(self) -> bool:
        """Whether the workspace's trust changed since it was judged (a covered file edited).

        A session asks before each line; when it did, the registry view is
        judged again (and the person told).
        """
        facts = self.compiled.trust
        if not facts or not facts.get("items") or "trust" not in self.__dict__:
            return False
        from mdagent.runtime.trust import evaluate

        if evaluate(facts).trusted == self.trust.trusted:
            return False
        for name in ("registry", "trust", "env", "project_layer"):
            self.__dict__.pop(name, None)
        return True

    def trust_lapsed_now(self) -> str | None:
        """Why the trust this run was given no longer holds (a covered file changed
        since: a hook script, an MCP server's script, the settings), or None.

        Asked before each hook runs and each MCP server starts: a model's
        command may rewrite such a file between two calls of one turn, and
        what trust covers must not then run (fail closed). Only a run that
        began trusted, with something trust covers, has anything to lose.
        """
        facts = self.compiled.trust
        if not facts or not facts.get("items") or not self.trusted:
            return None
        from mdagent.runtime.trust import evaluate

        now = evaluate(facts)
        if now.trusted:
            return None
        changed = "; ".join(now.changes) or "its files changed"
        return f"trust in this folder lapsed during this run ({changed}); `agent trust` to trust it again"

    def untrusted_server(self, name: str | None) -> str | None:
        """The MCP server ``name`` (``server__tool``, ``/server:prompt``) is of, when it is one
        an untrusted workspace declares and so is not started; else None."""
        if not name or self.trusted:
            return None
        from mdagent.runtime.trust import untrusted_servers

        name = name.lstrip("/")
        for server in untrusted_servers(self.trust):
            if name.startswith((f"{server}__", f"{server}:")):
                return server
        return None

    def keep_trust_current(self, untrusted_note: str | None = None) -> None:
        """After mdagent wrote a workspace file at the person's request, keep trust current.

        A folder that was trusted, or needed no trust, before the write is
        trusted as it is now (``agent new …``, an "always" answer, ``agent
        skills add``); one that was not stays as it was, and
        ``untrusted_note`` says so.
        """
        if not self.trusted:
            if untrusted_note:
                from mdagent.runtime.trust import tell

                tell(untrusted_note)
            return
        from mdagent.runtime.trust import TrustError, trust_folder

        try:
            trust_folder(self.cwd, layers=self.options.layers, no_user=self.options.no_user)
        except TrustError as err:  # what was asked for is done; say what is not
            from mdagent.runtime.trust import tell

            tell(f"{err}; run `agent trust` to trust this folder as it is now")

    @property
    def settings(self) -> dict[str, Any]:
        """The settings calls are judged by: the registry's, with this run's mode and rules.

        ``--mode``, ``/mode``, ``--allow`` and ``--deny`` live here, in memory
        only (:func:`mdagent.safety.modes.run_settings`); plan mode, wherever it
        came from, also puts every command in the read-only sandbox.
        """
        base = self.registry.settings
        options = self.options
        section = base.get("policy")
        planned = hasattr(section, "get") and section.get("mode") == "plan"
        if not (options.mode or options.allow or options.deny or planned):
            return base
        key = (options.mode, tuple(options.allow), tuple(options.deny))
        cached = self.__dict__.get("_run_settings")
        if cached is not None and cached[0] is base and cached[1] == key:
            return cached[2]
        from mdagent.safety.modes import run_settings

        value = run_settings(base, mode=options.mode, allow=options.allow, deny=options.deny)
        self.__dict__["_run_settings"] = (base, key, value)
        return value

    @property
    def mode(self):
        """The permission mode in force and what chose it (:func:`mdagent.safety.modes.effective_mode`)."""
        from mdagent.safety.modes import effective_mode

        options = self.options
        return effective_mode(self.registry.settings, options.mode, options.mode_source)

    @cached_property
    def workdir(self) -> Path:
        """The workspace root: file tools and exec stay inside it."""
        return project_root(self.cwd)

    @cached_property
    def project_layer(self) -> Path:
        return project_layer(self.layers, self.cwd)

    @cached_property
    def env(self) -> dict[str, str]:
        """The scrubbed environment every child process gets."""
        from mdagent.safety.environment import child_env

        return child_env(self.settings)

    @cached_property
    def store(self):
        from mdagent.store.store import Store

        # Settings read on the first write: `agent sessions` need not load the registry.
        return Store(settings=lambda: self.settings)

    def approver(self, interactive: bool | None = None):
        """Who answers the policy's questions here (:mod:`mdagent.runtime.approvers`).

        A person at the terminal when one is there (``interactive`` None: when
        ``/dev/tty`` opens or stdin is a terminal), else nobody. An "always"
        answer written into the project's settings keeps the workspace's
        trust current.
        """
        from mdagent.runtime.approvers import RefusingApprover, TerminalApprover

        if interactive is None:
            from mdagent.ui.approval import terminal_available

            interactive = terminal_available()
        if not interactive:
            return RefusingApprover()
        return TerminalApprover(
            self.project_layer,
            user_layer=next((layer.path for layer in self.layers if layer.kind == "user"), None),
            workdir=self.workdir,
            untrusted=lambda: not self.trusted,
            saved=lambda: self.keep_trust_current(
                "this folder is not trusted: its allow rules apply once you run `agent trust`"
            ),
        )

    def policy(self, approver=None, allow: Iterable[str] = ()):
        """The policy for calls of this process, asking ``approver`` (default: :meth:`approver`).

        ``allow`` adds allow rules for this policy only (a prompt skill's
        ``allowed-tools``); deny rules still apply.
        """
        from mdagent.safety.policy import Policy

        settings = self.settings
        if allow:
            section = dict(settings.get("policy") or {})
            existing = section.get("allow") or []
            existing = [existing] if isinstance(existing, str) else list(existing)
            section["allow"] = [*existing, *allow]
            settings = {**settings, "policy": section}
        return Policy(
            settings,
            workdir=self.workdir,
            store=self.store,
            approver=approver if approver is not None else self.approver(),
            approve_all=self.options.yes,
            project_layer=self.project_layer,
            session=self.session_approvals,
        )

    @cached_property
    def mcp(self):
        """The ``mcp_servers:`` of the settings: their tools and prompts (:mod:`mdagent.mcp.mcptools`)."""
        from mdagent.mcp.mcptools import McpTools

        return McpTools(self)

    def tool_spec(self, name: str | None) -> ToolSpec | None:
        """The tool called ``name``: declared, built in, or ``server__tool`` of an MCP server.

        Only a name of a declared MCP server contacts it (or reads its
        cached tool list); ToolFailed when that server cannot be reached.
        """
        spec = self.registry.tool(name)
        if spec is None and name and self.settings.get("mcp_servers"):
            spec = self.mcp.spec(name)
        return spec

    def toolbox(
        self, *, policy: Any = None, session_id: str | None = None, mcp: bool = True
    ) -> Toolbox:
        """A toolbox with every available tool, the YAML hooks and the audit log.

        With ``mcp_servers:`` declared (and ``mcp``), the servers' tools join
        it on first use (:class:`mdagent.mcp.mcptools.McpToolbox`); ``mcp=False``
        leaves them out (``agent mcp serve`` serves only this registry's own).
        """
        from mdagent.store.audit import AuditLog
        from mdagent.tools.builtins import register_builtins

        if mcp and self.settings.get("mcp_servers"):
            from mdagent.mcp.mcptools import McpToolbox

            box: Toolbox = McpToolbox(policy, self.mcp)
        else:
            box = Toolbox(policy=policy)
        builtin = [n for n, t in self.registry.tools.items() if t.kind == "builtin"]
        register_builtins(box, names=builtin)
        for spec in self.registry.tools.values():
            if spec.kind != "builtin":
                add_declared_tool(box, spec)
        if any(self.settings.get("hooks", {}).get(when) for when in ("before", "after")):
            from mdagent.tools.hooks import install_hooks

            install_hooks(
                box,
                self.settings,
                workdir=str(self.workdir),
                env=self.env,
                trust_check=self.trust_lapsed_now,
            )
        box.audit = AuditLog(self.store, session_id=session_id)
        return box

    def context(
        self,
        box: Toolbox,
        *,
        caller: str,
        output: TextIO | None = None,
        conversation_id: str | None = None,
        tool_call_id: str | None = None,
        cancel=None,
        skill_runner: Any = None,
    ) -> ToolContext:
        """A context for one call made by ``caller``.

        ``"person"`` (a command typed), ``"model"`` (an agent turn) or
        ``"mcp"`` (another agent, through ``agent mcp serve``): every caller but
        a person is judged as a model is, and confined by the sandbox. A
        person's command typed in a subfolder of the workspace carries that
        folder (``cwd``): its relative paths start there and its processes run
        there, as at a shell; the workspace still confines them.
        ``skill_runner`` (:class:`mdagent.agent.skillrunner.SkillRunner`, handed
        in by the agent and the edges above this layer) lets the ``skill``
        tool load prompt skills; without one it says it cannot.
        """
        extra = {} if cancel is None else {"cancel": cancel}
        if caller == "person" and self.cwd != self.workdir:
            extra["cwd"] = str(self.cwd)
        return ToolContext(
            tool_call_id=tool_call_id,
            conversation_id=conversation_id,
            workdir=str(self.workdir),
            env=self.env,
            toolbox=box,
            output=output,
            caller=caller,
            settings=self.settings,
            registry=self.registry,
            approve_all=self.options.yes,
            trusted=self.trusted,
            skill_runner=skill_runner,
            **extra,
        )

    def person_policy(self):
        """The policy for commands a person types, or None when it cannot refuse.

        A typed command meets only deny rules, plan mode's refusals and rate
        limits; with none of them, the policy module need not even be imported.
        """
        rate_limited = any(self.registry.tools[name].rate_limit for name in self.registry.tools)
        section = self.settings.get("policy", {})
        if section.get("deny") or section.get("mode") == "plan" or rate_limited:
            return self.policy(approver=self.approver(interactive=False))
        return None

    def unavailable(self, spec: ToolSpec) -> str | None:
        """Why ``spec`` cannot run here (its ``requires`` unmet), or None."""
        return unmet_requirement(spec.requires, os.environ)

    def sandbox_problem(self) -> Problem | None:
        """An ``info`` finding when the ``sandbox:`` settings cannot be enforced on this machine.

        Checked here and now, never cached with the registry: the kernel, not
        the files, decides. It points at the project's settings file, where
        ``sandbox:`` is changed. None when the sandbox works or is off.
        """
        from mdagent.core.defaults import settings_path
        from mdagent.safety.sandbox import available, unavailable_note
        from mdagent.safety.sandboxsettings import SandboxSettings

        try:
            settings = SandboxSettings.from_mapping(self.settings.get("sandbox"))
        except ConfigError:
            return None  # the settings file's own error says what is wrong, at its line
        reason = available(settings)
        if not reason:
            return None
        if settings.required:
            message = f"sandbox.required is set but {reason}: model commands will be refused"
        else:
            message = unavailable_note(reason)
        where = settings_path(self.project_layer)
        return Problem(str(where), 1, 1, "info", message)

    def check_settings(self) -> None:
        """Refuse to run with broken settings: a half-read policy is not a policy."""
        # settings_errors comes from the cache's index: no skill is read for it.
        for problem in self.registry.settings_errors:
            raise ConfigError(problem.message, problem.path, problem.line, problem.col)


def add_declared_tool(box: Toolbox, spec: ToolSpec) -> None:
    """Register a YAML-declared tool whose handler is built on first call."""
    built: list[Any] = []

    def handler(args: dict[str, Any], ctx: ToolContext) -> Any:
        if not built:
            from mdagent.tools.implementations import make_handler

            built.append(
                make_handler(
                    {**spec.implementation, "timeout": spec.timeout},
                    name=spec.name,
                    params=spec.params,
                    required=spec.required,
                    base_dir=Path(spec.implementation.get("base_dir") or Path(spec.source).parent),
                )
            )
        return built[0](args, ctx)

    box.add_spec(spec, handler)
