"""Tools and the toolbox that runs them.

The toolbox is the one place every call goes through, whoever makes it (a
person at the shell, a model, another agent over MCP)::

    validate -> deny rules -> before hooks (global, then the tool's) -> ask/allow
             -> audit row -> handler -> after hooks (global, then the tool's)
             -> audit outcome -> Result

Before hooks run after the deny rules and before the ask/allow rules, so a
hook may decide (:class:`HookDecision`): refuse the call, let it run without
a question, ask a person, or rewrite its arguments (which are validated and
meet the deny rules again). The audit row is written before anything of the
call runs: a call that cannot be put on the record does not run (it fails
with the reason).

Semantics follow elelem's toolbox: handlers return dicts, ``{"error": ...}``
is a failure, a raised exception is a failure that carries what went wrong,
unknown names get a stand-in that lists the real tools.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping

from mdagent.core.calls import ALLOWED, Decision, HookDecision, Result, ToolContext
from mdagent.core.fastcheck import compile_schema

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    Handler = Callable[..., Any]
    Hook = Callable[..., Any]


def _log():
    # logging costs a few ms to import; only a failing call needs it.
    from mdagent.core.errors import logger

    return logger("mdagent.tools.toolbox")


def accepts_context(handler: Handler) -> bool:
    """Whether ``handler`` takes a second positional parameter (the context)."""
    code = getattr(handler, "__code__", None)
    if code is not None and not hasattr(handler, "__self__"):
        if code.co_flags & 0x04:  # *args
            return True
        return code.co_argcount >= 2
    import inspect

    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.kind == p.VAR_POSITIONAL for p in params)


def _pointer(path: Iterable[Any]) -> str:
    return "/" + "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _validation_messages(validator: Any, args: Mapping[str, Any]) -> list[str]:
    """One message per problem, each naming the JSON pointer of the bad value."""
    messages = []
    for err in sorted(validator.iter_errors(args), key=lambda e: list(map(str, e.path))):
        if err.validator == "required" and isinstance(err.instance, Mapping):
            base = list(err.absolute_path)
            for name in err.validator_value:
                if name not in err.instance:
                    messages.append(f"value at `{_pointer([*base, name])}` is required")
            continue
        messages.append(f"value at `{_pointer(err.absolute_path)}` {_describe(err)}")
    return messages


def _describe(err: Any) -> str:
    # jsonschema messages start with the offending value ("5 is not of type
    # 'string'"); the pointer already says which value, so keep the verdict.
    message = err.message
    shown = repr(err.instance)
    if message.startswith(shown + " "):
        return message[len(shown) + 1 :]
    if message.startswith(json.dumps(err.instance, default=str) + " "):
        return message[len(json.dumps(err.instance, default=str)) + 1 :]
    return message


class Tool:
    """A named, described, schema-checked callable."""

    # A plain class rather than a dataclass: it is defined on every start-up.
    __slots__ = (
        "name",
        "description",
        "handler",
        "params",
        "required",
        "aliases",
        "meta",
        "_validator",
        "_fast_check",
        "_wants_context",
    )

    def __init__(
        self,
        name: str,
        description: str,
        handler: Handler,
        params: dict[str, Any] | None = None,
        required: tuple[str, ...] = (),
        aliases: tuple[str, ...] = (),
        meta: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.handler = handler
        self.params = params if params is not None else {}
        self.required = tuple(required)
        self.aliases = tuple(aliases)
        self.meta = meta if meta is not None else {}
        self._validator: Any = None
        # The compiled check of the schema (mdagent.core.fastcheck; None: not
        # compiled yet; False: only jsonschema can judge it).
        self._fast_check: Any = None
        self._wants_context: bool | None = None

    def __repr__(self) -> str:
        return f"Tool({self.name!r}, aliases={self.aliases!r})"

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON Schema the arguments are validated against."""
        return {"type": "object", "properties": self.params, "required": list(self.required)}

    def validate(self, args: Mapping[str, Any]) -> list[str]:
        """Problems with ``args`` (empty when they are valid).

        Arguments the compiled schema check accepts pass without jsonschema
        (:mod:`mdagent.core.fastcheck`); anything else, and every problem
        reported, is jsonschema's.
        """
        if self._fast_check is None:
            self._fast_check = compile_schema(self.schema) or False
        if self._fast_check and self._fast_check(args):
            return []
        if self._validator is None:
            # Compiled once per tool, on first use: most tools of a registry
            # are never called in a given process.
            from jsonschema import Draft202012Validator

            self._validator = Draft202012Validator(self.schema)
        try:
            if self._validator.is_valid(args):
                return []
            return _validation_messages(self._validator, args)
        except Exception as exc:  # a schema jsonschema cannot apply (a $ref to nowhere...)
            # `agent check` refuses such schemas in YAML; one added in Python
            # still makes a failed call, never an internal error.
            return [f"cannot check arguments against the schema of {self.name}: {exc}"]

    def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        """Call the handler, passing the context when it accepts one."""
        if self._wants_context is None:
            self._wants_context = accepts_context(self.handler)
        return self.handler(args, ctx) if self._wants_context else self.handler(args)

    def run(self, args: Mapping[str, Any] | None = None, context: ToolContext | None = None):
        """Run this tool alone (no toolbox hooks); see :meth:`Toolbox.run`."""
        box = Toolbox()
        box._tools[self.name] = self
        return box.run(self.name, args, context)


class UnknownTool:
    """Stand-in for a name that matches no tool; its run lists the real ones."""

    def __init__(self, name: str, available: Iterable[str]):
        self.name = f"{name}?"
        self.requested = name
        self.available = sorted(available)
        self.description = f"unknown tool: {name}"
        self.aliases: tuple[str, ...] = ()
        self.meta: dict[str, Any] = {}

    def run(self, args: Mapping[str, Any] | None = None, context: ToolContext | None = None):
        """Always a failure naming the tools that do exist."""
        from mdagent.core.errors import unknown_tool

        return Result.failure(unknown_tool(self.requested, self.available))


def _normalise_result(raw: Any) -> Result:
    if raw is None:
        return Result.failure("tool returned no result")
    if not isinstance(raw, dict):
        return Result.failure(f"tool returned {type(raw).__name__}, expected a dict")
    data = {k: v for k, v in raw.items() if k != "ok"}
    if raw.get("error") is not None or raw.get("ok") is False:
        data.setdefault("error", "tool failed")
        return Result(data, False)
    return Result(data, True)


def _blocked(reason: str) -> Decision:
    return Decision(False, reason, code="DENIED", extra={"blocked_by": "hook"})


def _deny_rules(policy: Any, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Decision:
    """The deny rules' verdict (a policy without ``screen`` judges everything in ``check``)."""
    screen = getattr(policy, "screen", None)
    decision = screen(tool, args, ctx) if screen is not None else None
    return decision or ALLOWED


def _ask_or_allow(
    policy: Any, tool: Tool, args: dict[str, Any], ctx: ToolContext, hook: HookDecision | None
) -> Decision:
    """The rest of the policy (ask/allow rules, mode, a person), with the before hooks' say."""
    if policy is not None:
        if hook is None:  # a policy object need not know about hooks
            return policy.check(tool, args, ctx)
        return policy.check(tool, args, ctx, hook=hook)
    if hook is None or ctx.caller == "person":  # a person's command runs as typed
        return ALLOWED
    if hook.decision == "ask":
        reason = f": {hook.reason}" if hook.reason else ""
        return Decision(
            False,
            f"{tool.name} needs approval: hook {hook.hook} asks for it{reason}; "
            "no policy here to ask a person with",
            code="DENIED",
        )
    return Decision(True, approved_by=f"hook:{hook.hook}")


class Toolbox:
    """A set of tools plus the hooks and policy every call passes through."""

    def __init__(self, policy: Any = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._aliases: dict[str, str] = {}
        self._before: dict[str, list[Hook]] = {}
        self._after: dict[str, list[Hook]] = {}
        self.policy = policy
        #: The audit log (``start(tool_name, args, decision, ctx) -> row`` before
        #: a call runs, raising when it cannot record it; ``finish(row, tool_name,
        #: args, result, decision, duration_s, ctx)`` after); None: no record.
        self.audit: Any = None
        # Called after every call of a known tool, whatever its outcome, with
        # (tool_name, args, result, decision, duration_s, ctx).
        self.observers: list[Callable[..., Any]] = []
        # Per thread (calls run concurrently): how long the thread's last call
        # waited for a person's answer, apart from its run time (:meth:`waited`).
        self._wait = threading.local()

    # -- registering -------------------------------------------------------

    def add_spec(self, spec: Any, handler: Handler) -> Tool:
        """Add the declared tool ``spec`` (a :class:`mdagent.core.specs.ToolSpec`) with ``handler``."""
        return self.add(
            spec.name,
            description=spec.description,
            params=spec.params,
            required=spec.required,
            aliases=spec.aliases,
            handler=handler,
            **spec.meta,
        )

    def add(
        self,
        name: str,
        *,
        description: str,
        params: Mapping[str, Any] | None = None,
        required: Iterable[str] = (),
        aliases: Iterable[str] = (),
        handler: Handler,
        **meta: Any,
    ) -> Tool:
        """Add (or replace) a tool.

        ``meta`` keeps declaration fields the toolbox itself does not act on
        (category, security, tier, approval, requires, rate_limit, timeout).
        """
        old = self._tools.get(name)
        if old is not None:
            for alias in old.aliases:
                if self._aliases.get(alias) == name:
                    del self._aliases[alias]
        tool = Tool(
            name=name,
            description=description,
            handler=handler,
            params=dict(params or {}),
            required=tuple(required),
            aliases=tuple(aliases),
            meta=dict(meta),
        )
        self._tools[name] = tool
        for alias in tool.aliases:
            self._aliases[alias] = name
        return tool

    def tool(self, name: str | None = None, **kwargs: Any) -> Callable[[Handler], Handler]:
        """Decorator form of :meth:`add`; the name defaults to the function's."""

        def register(fn: Handler) -> Handler:
            description = kwargs.pop("description", None) or (fn.__doc__ or "").strip()
            self.add(name or fn.__name__, description=description, handler=fn, **kwargs)
            return fn

        return register

    def before(self, tool_name: str = "*") -> Callable[[Hook], Hook]:
        """Decorator: run a hook before ``tool_name`` (``"*"``: every tool).

        Per-tool hooks get ``(args)``; global hooks get ``(args, tool_name=)``.
        Raising stops the call; the exception's message becomes the error. A
        hook may return a :class:`HookDecision` to decide the call or change
        its arguments; any other return value is ignored.
        """
        return self._hook(self._before, tool_name)

    def after(self, tool_name: str = "*") -> Callable[[Hook], Hook]:
        """Decorator: run a hook after ``tool_name`` with ``(args, result)``.

        ``result`` is the handler's raw dict (no ``ok``), errors included.
        Global hooks also get ``tool_name=``.
        """
        return self._hook(self._after, tool_name)

    @staticmethod
    def _hook(table: dict[str, list[Hook]], tool_name: str) -> Callable[[Hook], Hook]:
        def register(fn: Hook) -> Hook:
            table.setdefault(tool_name, []).append(fn)
            return fn

        return register

    # -- looking up ----------------------------------------------------------

    @property
    def tools(self) -> dict[str, Tool]:
        """Tools by real name."""
        return dict(self._tools)

    @property
    def aliases(self) -> dict[str, str]:
        """Alias -> real name."""
        return dict(self._aliases)

    @property
    def hooks(self) -> dict[str, dict[str, list[Hook]]]:
        """``{"before": {name: [fns]}, "after": {name: [fns]}}``."""
        return {
            "before": {k: list(v) for k, v in self._before.items()},
            "after": {k: list(v) for k, v in self._after.items()},
        }

    def __contains__(self, name: object) -> bool:
        return name in self._tools or name in self._aliases

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def tool_for(self, name: str) -> Tool | UnknownTool:
        """The tool called ``name`` (aliases followed), or an :class:`UnknownTool`."""
        tool = self._tools.get(name)
        if tool is None and name in self._aliases:
            tool = self._tools.get(self._aliases[name])
        return tool if tool is not None else UnknownTool(name, self._tools)

    # -- running -------------------------------------------------------------

    def run(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        context: ToolContext | None = None,
    ) -> Result:
        """Run one call: admit (validate, deny rules, before hooks, ask/allow), audit,
        handler, after hooks; never raises for tool errors."""
        self._wait.seconds = 0.0
        tool = self.tool_for(name)
        if isinstance(tool, UnknownTool):
            return tool.run(args)
        ctx = self._context(context)
        started = time.perf_counter()
        args = dict(args or {})
        if getattr(ctx, "cwd", None) is not None and ctx.caller == "person":
            # Typed in a subfolder: its relative paths are rebased once, here,
            # so the deny rules judge the very path the tool opens.
            from mdagent.safety.workspace import person_arguments

            args = person_arguments(tool.name, args, ctx)
        args, decision, refusal = self._admit(tool, args, ctx)
        # The time spent waiting for a person is not the call's run time.
        self._wait.seconds = decision.waited_s
        started += decision.waited_s
        if refusal is not None:  # never runs, but goes on the record
            return self._observe(None, tool, args, refusal, decision, started, ctx)
        try:
            row = self._record_start(tool, args, decision, ctx)
        except Exception as exc:  # no record, no call: the audit log never switches off
            unrecorded = Result.failure(
                f"not run: cannot record the call: {exc}", code="UNRECORDED"
            )
            return self._notify(tool, args, unrecorded, decision, started, ctx)
        try:
            result = self._dispatch(tool, args, ctx)
        except KeyboardInterrupt:
            # Ctrl-C ends the process, but the call's row gets its outcome first.
            interrupted = Result.failure("interrupted", interrupted=True)
            self._observe(row, tool, args, interrupted, decision, started, ctx)
            raise
        return self._observe(row, tool, args, result, decision, started, ctx)

    def waited(self) -> float:
        """How long this thread's last :meth:`run` waited for a person's answer (seconds)."""
        return getattr(self._wait, "seconds", 0.0)

    def _admit(self, tool: Tool, args: dict[str, Any], ctx: ToolContext):
        """``(args, decision, None)`` for a call that may run, else ``(args, decision, failure)``.

        The order: validate -> deny rules -> before hooks -> ask/allow. The
        arguments returned are those a hook gave, if one did.
        """
        problems = tool.validate(args)
        if problems:
            return args, ALLOWED, Result.failure(", ".join(problems))
        policy = ctx.policy if ctx.policy is not None else self.policy
        decision = _deny_rules(policy, tool, args, ctx)
        hook = None
        if decision.allowed:
            args, hook, decision = self._before_hooks(tool, args, ctx, policy)
        if decision.allowed:
            decision = _ask_or_allow(policy, tool, args, ctx, hook)
        return args, decision, None if decision.allowed else decision.to_result()

    def _before_hooks(self, tool: Tool, args: dict[str, Any], ctx: ToolContext, policy: Any):
        """Run the before hooks in order: ``(args, the hooks' say, decision)``.

        A hook that raises or answers "deny" refuses the call; arguments a
        hook gives are validated and meet the deny rules before the next hook
        sees them. Of "allow" and "ask", "ask" wins.
        """
        hooks = [(h, {"tool_name": tool.name}) for h in self._before.get("*", ())]
        hooks += [(h, {}) for h in self._before.get(tool.name, ())]
        said: HookDecision | None = None
        for hook, kw in hooks:
            try:
                answer = hook(args, **kw)
            except Exception as exc:  # a before hook vetoes the call: a refusal, like policy's
                return args, said, _blocked(str(exc) or type(exc).__name__)
            if not isinstance(answer, HookDecision):
                continue
            if answer.decision == "deny":
                return args, said, _blocked(answer.reason or f"denied by hook {answer.hook}")
            if answer.arguments is not None:
                args = dict(answer.arguments)
                problems = tool.validate(args)
                if problems:
                    why = f"hook {answer.hook} gave invalid arguments: {', '.join(problems)}"
                    return args, said, _blocked(why)
                decision = _deny_rules(policy, tool, args, ctx)
                if not decision.allowed:
                    return args, said, decision
            if answer.decision in ("allow", "ask") and (said is None or said.decision != "ask"):
                said = answer
        return args, said, ALLOWED

    def _record_start(self, tool: Tool, args, decision: Decision, ctx: ToolContext) -> Any:
        return None if self.audit is None else self.audit.start(tool.name, args, decision, ctx)

    def _observe(
        self, row: Any, tool: Tool, args, result: Result, decision, started: float, ctx
    ) -> Result:
        """Record the outcome and tell the observers; the result (with a warning when
        the outcome could not be recorded: the call happened, its row says "started")."""
        if self.audit is not None:
            took = time.perf_counter() - started
            try:
                self.audit.finish(row, tool.name, args, result, decision, took, ctx)
            except Exception as exc:
                _log().warning("audit log: %s", exc)
                result = Result({**result.data, "audit_warning": str(exc)}, result.ok)
        return self._notify(tool, args, result, decision, started, ctx)

    def _notify(self, tool: Tool, args, result: Result, decision, started: float, ctx) -> Result:
        took = time.perf_counter() - started
        for observe in self.observers:
            try:
                observe(tool.name, args, result, decision, took, ctx)
            except Exception:  # an observer must never change a call's outcome
                _log().warning("observer %r raised", observe, exc_info=True)
        return result

    def _context(self, context: ToolContext | None) -> ToolContext:
        if context is None:
            return ToolContext(toolbox=self)
        if context.toolbox is None:
            return context.replace(toolbox=self)
        return context

    def _dispatch(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Result:
        """The handler, then the after hooks (global, then the tool's)."""
        raw = self._call_handler(tool, args, ctx)
        for hook in self._after.get("*", ()):
            self._run_after(hook, args, raw, tool_name=tool.name)
        for hook in self._after.get(tool.name, ()):
            self._run_after(hook, args, raw)
        return _normalise_result(raw)

    @staticmethod
    def _call_handler(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> Any:
        try:
            return tool.call(args, ctx)
        except KeyboardInterrupt:
            raise
        except SystemExit as exc:
            # A handler must not end the whole process (and skip the audit log).
            return {
                "error": f"tool called exit({exc.code})",
                "type": "SystemExit",
                "name": tool.name,
                "args": args,
            }
        except Exception as exc:
            _log().warning("tool %s raised %s", tool.name, type(exc).__name__, exc_info=True)
            return {
                "error": str(exc) or type(exc).__name__,
                "type": type(exc).__name__,
                "name": tool.name,
                "args": args,
            }

    @staticmethod
    def _run_after(hook: Hook, args: dict[str, Any], raw: Any, **kw: Any) -> None:
        try:
            hook(args, raw, **kw)
        except Exception:  # an after hook cannot undo a call that happened
            _log().warning("after hook %r raised", hook, exc_info=True)

    # -- serialising ---------------------------------------------------------

    def to_openai(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Tools in the OpenAI Chat Completions ``tools`` format (no aliases)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.schema,
                },
            }
            for t in self._selected(names)
        ]

    def to_anthropic(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """Tools in the Anthropic Messages ``tools`` format (no aliases)."""
        return [
            {"name": t.name, "description": t.description, "input_schema": t.schema}
            for t in self._selected(names)
        ]

    def _selected(self, names: Iterable[str] | None) -> list[Tool]:
        if names is None:
            return list(self._tools.values())
        return [self._tools[n] for n in names if n in self._tools]
