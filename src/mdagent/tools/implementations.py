"""How a declared tool does its work: ``run``, ``shell``, ``handler``, ``http`` or ``tool``.

The call-time half: :func:`make_handler` builds the ``(args, ctx) -> dict``
function the :class:`~mdagent.tools.toolbox.Toolbox` calls. The load-time
half, what is wrong with a declaration's implementation, is
:func:`mdagent.declarations.kinds.check_implementation` (the registry turns
each message into a ``path:line: message`` problem, so a broken tool is
reported by ``agent check`` instead of failing on first use).

Values reach children only through :mod:`mdagent.tools.templates`: ``run:`` never
involves a shell, ``shell:`` quotes every value, ``http:`` percent-encodes
URL values. Processes run through :func:`mdagent.tools.process.run_tool_process`,
as ``exec``'s do (own process group, capped output, timeout kills the group);
requests through :func:`mdagent.tools.builtins.web.request`, as ``fetch``'s do.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from mdagent.core.calls import ToolContext
from mdagent.declarations.kinds import IMPLEMENTATION_KEYS, shell_argument, split_handler
from mdagent.tools import templates
from mdagent.tools.toolbox import accepts_context

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

    ToolHandler = Callable[[dict[str, Any], ToolContext], dict[str, Any]]

__all__ = [
    "allowed_options",
    "make_handler",
    "option_params",
]

# Composition is a tool calling a tool; a cycle in declarations (a -> b -> a)
# would otherwise recurse until Python's own limit.
MAX_COMPOSITION_DEPTH = 8


# -- call time -----------------------------------------------------------------


def make_handler(
    spec: Mapping[str, Any],
    *,
    name: str,
    params: Mapping[str, Any],
    base_dir: Path | str,
    required: Iterable[str] | None = None,
    timeout: float | None = None,
) -> ToolHandler:
    """The ``(args, ctx) -> dict`` handler for a declared tool.

    ``spec`` holds the implementation (one of
    :data:`~mdagent.declarations.kinds.IMPLEMENTATION_KEYS`, plus ``with``); ``required`` and ``timeout`` default to ``spec``'s own
    keys of those names, so either a whole declaration or a
    :class:`~mdagent.core.specs.ToolSpec`'s ``implementation`` plus its
    ``required``/``timeout`` can be given. Assumes :func:`~mdagent.declarations.kinds.check_implementation`
    found nothing wrong; raises ``ValueError`` when there is no implementation.
    """
    required = frozenset((spec.get("required") or ()) if required is None else required)
    timeout = spec.get("timeout") if timeout is None else timeout
    params = dict(params)
    options = option_params(spec, params)
    if "run" in spec:
        return _run_handler(list(spec["run"]), params, required, timeout, options)
    if "shell" in spec:
        return _shell_handler(spec["shell"], params, required, timeout, options)
    if "handler" in spec:
        return _python_handler(spec["handler"], name, Path(base_dir), timeout)
    if "http" in spec:
        return _http_handler(spec["http"], params, required, timeout)
    if "tool" in spec:
        return _tool_handler(spec["tool"], spec.get("with"), name, params, required, options)
    raise ValueError(f"tool {name} has no implementation ({', '.join(IMPLEMENTATION_KEYS)})")


def option_params(spec: Mapping[str, Any], params: Mapping[str, Any]) -> frozenset[str]:
    """The parameters whose values may start with ``-`` in a model's call.

    Declared ``option: true`` in the params schema (the YAML loader moves
    the names to the implementation's ``options``, so the keyword never
    reaches a model's tool schema).
    """
    declared = {n for n, s in params.items() if isinstance(s, Mapping) and s.get("option") is True}
    return frozenset(declared | set(spec.get("options") or ()))


def allowed_options(ctx: ToolContext, options: frozenset[str]) -> frozenset[str] | None:
    """``None`` (every value as meant) for a person's call, else the opted-in parameters.

    A person typing ``/grep -i x`` means the option; a model's ``-rf`` may be
    an injection, so only parameters the declaration opts in may carry one.
    """
    return None if getattr(ctx, "caller", None) == "person" else options


def _option_refused(exc: templates.OptionValueError) -> dict[str, Any]:
    return {"error": str(exc), "param": exc.name}


# run / shell -------------------------------------------------------------------


def _run_handler(template: list[Any], params, required, timeout, options) -> ToolHandler:
    def run(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        allow = allowed_options(ctx, options)
        try:
            argv = templates.expand_argv(
                template, args, params, required=required, allow_options=allow
            )
        except templates.OptionValueError as exc:
            return _option_refused(exc)
        if not argv:
            return {"error": "nothing to run: the argv template expanded to nothing"}
        from mdagent.tools.process import run_tool_process

        # The path exec takes too: environment, workspace, limits and result in one place.
        return run_tool_process(argv, ctx, timeout=timeout)

    return run


def _shell_handler(template: str, params, required, timeout, options) -> ToolHandler:
    def shell(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        allow = allowed_options(ctx, options)
        try:
            script = templates.expand_shell(
                template, args, params, required=required, allow_options=allow
            )
        except templates.OptionValueError as exc:
            return _option_refused(exc)
        from mdagent.tools.process import run_tool_process

        return run_tool_process(["sh", "-c", "--", script], ctx, timeout=timeout)

    return shell


# handler -------------------------------------------------------------------------

# path -> ((mtime_ns, size), module or the one-line reason it failed to load).
# Keyed on the stamp so an edited handler is reloaded in a long session.
_modules: dict[str, tuple[tuple[int, int], Any]] = {}
_modules_lock = threading.RLock()  # re-entrant: a handler module may load another


def _python_handler(ref: str, name: str, base_dir: Path, timeout: float | None) -> ToolHandler:
    shown, func = split_handler(ref)
    path = base_dir / shown

    def handler(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        # Loaded on first call, not at registry load: most tools are never
        # called in a given process, and importing runs the user's code.
        fn = _load_function(path, shown, func)
        if isinstance(fn, str):
            return {"error": fn}
        call_args = (args, ctx) if accepts_context(fn) else (args,)
        try:
            if not timeout:
                return fn(*call_args)
            return _call_with_timeout(lambda: fn(*call_args), timeout, ctx.cancel, name)
        except SystemExit as exc:
            # sys.exit() in a handler must fail the call, not end the agent
            # (and with it the session and the audit log).
            return {"error": f"{shown}: {func}() called exit({exc.code})", "type": "SystemExit"}

    return handler


def _load_function(path: Path, shown: str, func: str) -> Callable[..., Any] | str:
    """The handler function, or the one-line reason it cannot be had."""
    try:
        stat = path.stat()
    except OSError as exc:
        return f"cannot load {shown}: {exc.strerror or exc}"
    key = str(path.resolve())
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _modules_lock:
        cached = _modules.get(key)
        if cached is None or cached[0] != stamp:
            cached = (stamp, _import_file(path, key, shown))
            _modules[key] = cached
    module = cached[1]
    if isinstance(module, str):
        return module
    fn = getattr(module, func, None)
    if fn is None:
        return f"cannot load {shown}: it has no function {func}()"
    if not callable(fn):
        return f"cannot load {shown}: {func} is not a function"
    return fn


def _import_file(path: Path, key: str, shown: str) -> Any:
    import importlib.util

    stem = re.sub(r"\W", "_", path.stem)
    # Unique per path: two layers may both have handlers/wc.py.
    import hashlib

    module_name = f"_mdagent_handler_{stem}_{hashlib.sha1(key.encode()).hexdigest()[:10]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None:
        return f"cannot load {shown}: not a Python file"
    module = importlib.util.module_from_spec(spec)
    try:
        source = path.read_bytes()
        # Compiled here rather than by spec.loader: no __pycache__ is written
        # into the user's config folder, and a stale .pyc (same size, same
        # second) can never hide an edit.
        code = compile(source, str(path), "exec")
        # In sys.modules while it runs, as a normal import would be
        # (dataclasses and pickling look the module up there).
        sys.modules[module_name] = module
        exec(code, module.__dict__)
    except SyntaxError as exc:
        sys.modules.pop(module_name, None)
        return f"cannot load {shown}: SyntaxError: {exc.msg} (line {exc.lineno})"
    except (Exception, SystemExit) as exc:
        import traceback

        sys.modules.pop(module_name, None)
        lines = [
            f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == str(path)
        ]
        where = f" (line {lines[-1]})" if lines else ""
        message = " ".join(str(exc).split())
        return f"cannot load {shown}: {type(exc).__name__}: {message}{where}"
    return module


def _call_with_timeout(
    call: Callable[[], Any], timeout: float, cancel: threading.Event | None, name: str
) -> Any:
    """``call()`` in a worker thread, given up on after ``timeout`` seconds.

    Python cannot kill a thread: a handler that never returns keeps running
    (as a daemon thread, so it does not hold up exit) after the call has
    failed. Handlers that can hang should check ``ctx.cancel`` themselves.
    """
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the caller, raised there
            outcome["exc"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name=f"mdagent-handler-{name}", daemon=True).start()
    deadline = time.monotonic() + timeout
    while not done.wait(min(0.05, max(deadline - time.monotonic(), 0))):
        if cancel is not None and cancel.is_set():
            return {"error": "interrupted", "interrupted": True, "exit_code": 130}
        if time.monotonic() >= deadline:
            return {"error": f"timed out after {timeout:g} s", "timed_out": True, "exit_code": 124}
    if "exc" in outcome:
        raise outcome["exc"]
    return outcome.get("value")


# http ----------------------------------------------------------------------------


def _http_handler(http: Mapping[str, Any], params, required, timeout) -> ToolHandler:
    method = str(http.get("method") or "GET").upper()
    from mdagent.core.defaults import DEFAULT_SETTINGS

    limit = http.get("timeout") or timeout or DEFAULT_SETTINGS["fetch"]["timeout"]

    def request(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        from mdagent.tools.builtins.web import request as web_request

        url = templates.expand_url(http["url"], args, params, required=required)
        headers = templates.expand_value(http.get("headers") or {}, args, params, required=required)
        options: dict[str, Any] = {"headers": {k: _header(v) for k, v in headers.items()}}
        if http.get("json") is not None:
            options["json"] = templates.expand_value(http["json"], args, params, required=required)
        elif http.get("body") is not None:
            body = templates.expand_value(http["body"], args, params, required=required)
            options["content"] = _header(body).encode()
        # The one request fetch also makes: its URL and every redirect are
        # judged by the fetch(domain:…) rules, and `limit` bounds the whole call.
        got = web_request(
            method,
            url,
            ctx,
            timeout=float(limit),
            max_bytes=int(DEFAULT_SETTINGS["fetch"]["max_bytes"]),
            failed=f"{method} {_origin(url)} failed",
            **options,
        )
        return got if isinstance(got, dict) else _http_result(got)

    return request


def _header(value: Any) -> str:
    return "" if value is None else templates.as_text(value)


def _origin(url: str) -> str:
    """Scheme and host of ``url``: enough to say where, without query secrets."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url


def _http_result(response: Any) -> dict[str, Any]:
    """The tool result for a :class:`mdagent.tools.builtins.web.Response`."""
    raw, truncated = response.body, response.truncated
    try:
        text = raw.decode(response.encoding or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        text = raw.decode("utf-8", errors="replace")
    data: dict[str, Any] = {
        "status": response.status,
        "headers": dict(response.headers),
        "truncated": truncated,
    }
    content_type = response.headers.get("content-type", "")
    parsed = False
    if "json" in content_type and not truncated:
        try:
            data["json"] = json.loads(text)
            parsed = True
        except ValueError:
            pass  # labelled JSON but is not: give the text
    if not parsed:
        data["text"] = text
    data["output"] = text
    if not 200 <= response.status < 300:
        data["error"] = f"HTTP {response.status}"
    return data


# tool + with -----------------------------------------------------------------------

_composition = threading.local()


def _tool_handler(
    target: str, with_: Mapping[str, Any] | None, name: str, params, required, options
) -> ToolHandler:
    def compose(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        if ctx.toolbox is None:
            return {"error": f"{name} calls {target}, but no toolbox was given to call it through"}
        # Without `with`, the tool's own arguments are passed on as they are.
        if with_ is None:
            inner = dict(args)
        else:
            inner = templates.expand_value(with_, args, params, required=required)
            command = shell_argument(target, with_)
            if command is not None:
                allow = allowed_options(ctx, options)
                try:
                    inner["command"] = templates.expand_shell(
                        command, args, params, required=required, allow_options=allow
                    )
                except templates.OptionValueError as exc:
                    return _option_refused(exc)
        chain: list[str] = getattr(_composition, "chain", None) or []
        if len(chain) >= MAX_COMPOSITION_DEPTH:
            path = " -> ".join([*chain, name, target])
            return {"error": f"tools call each other too deeply (a cycle?): {path}"}
        _composition.chain = [*chain, name]
        try:
            # Through the toolbox, so the inner call is validated, judged by
            # the policy and seen by hooks like any other call.
            result = ctx.toolbox.run(target, inner, ctx)
        finally:
            _composition.chain = chain
        return dict(result.data)

    return compose
