"""``agent test``: the tests authors declare next to their tools and commands.

A tool or command in ``config/*.yaml`` and a command skill's SKILL.md
front-matter may carry ``tests:``, a list of::

    - name: counts README          # optional: how the test is shown
      argv: "README.md"            # typed after /name (or `args: {...}` for a tool)
      approve: true                # optional: asks are approved (else refused)
      expect: {ok: true, contains: "3"}

Each test runs through the real toolbox (validation, deny rules, before
hooks, the rest of the policy, the handler, after hooks) as caller
``"test"``: judged like a model's call, so the sandbox confines its
processes, and, nobody being there to ask, an ``ask`` is a refusal unless
the test says ``approve: true``. It runs in a fresh temporary copy of the
workspace, so a test that writes files leaves the real one unchanged, and
its calls are not written to the audit log (they touched only the copy).

The ``expect`` keys (every one given must hold): ``ok``, ``exit`` (the
status ``agent /name`` would exit with), ``output`` (equal, trailing
newlines ignored), ``contains`` (a string or a list), ``matches`` (a
regular expression, searched), ``json`` (JSON pointer -> value, on the
result; a string holding JSON is read as JSON on the way down), ``error``
(a substring of the failure message) and ``denied: true``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from mdagent.core.errors import MdagentError, ToolFailed, UsageError
from mdagent.core.records import Record

#: Folders left out of the workspace copy: rebuilt caches and environments,
#: never what a declared tool is about, and often most of the bytes.
SKIPPED_FOLDERS = frozenset(
    {
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)
#: A workspace larger than this is not copied once per test: one clear refusal.
MAX_COPY_FILES = 20_000
MAX_COPY_BYTES = 256 << 20

_MISSING = object()


class DeclaredTest(Record):
    """One entry of a ``tests:`` block and where it is written."""

    kind: str  # "tool" or "command"
    name: str  # the tool's or the command's name
    entry: dict[str, Any]
    path: str
    line: int
    col: int
    layer: str

    @property
    def label(self) -> str:
        """How the test is shown: ``/count counts README``, ``weather {"city": "Paris"}``."""
        head = f"/{self.name}" if self.kind == "command" else self.name
        what = self.entry.get("name")
        if what is None:
            if "argv" in self.entry:
                argv = self.entry["argv"]
                what = argv if isinstance(argv, str) else " ".join(map(str, argv))
            else:
                what = json.dumps(self.entry.get("args") or {}, ensure_ascii=False)
        return f"{head} {what}".rstrip()

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


class Outcome(Record):
    """What one test did: the failures (empty when it passed), the result and exit status."""

    test: DeclaredTest
    failures: list[str]
    result: dict[str, Any]
    exit: int

    @property
    def passed(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` object of this test."""
        test = self.test
        return {
            "label": test.label,
            "kind": test.kind,
            "name": test.name,
            "path": test.path,
            "line": test.line,
            "col": test.col,
            "layer": test.layer,
            "passed": self.passed,
            "failures": self.failures,
            "exit": self.exit,
            "result": self.result,
        }


# -- finding the tests -------------------------------------------------------------


def collect(registry: Any) -> list[DeclaredTest]:
    """Every declared test of the tools and commands ``registry`` loaded, in file order.

    The tests are read again from their files (the registry keeps no
    tests): each one knows its own line. Entries of declarations that did
    not load are reported by ``agent check``, not run.
    """
    yaml_files: dict[str, list[tuple[str, str, str]]] = {}
    for spec in registry.tools.values():
        if spec.source.endswith((".yaml", ".yml")):
            yaml_files.setdefault(spec.source, []).append(("tools", spec.name, spec.layer))
    skills: list[tuple[str, str, str]] = []
    for command in registry.commands.values():
        if command.skill:
            skills.append((command.source, command.name, command.layer))
        elif command.source.endswith((".yaml", ".yml")):
            yaml_files.setdefault(command.source, []).append(
                ("commands", command.name, command.layer)
            )
    found: list[DeclaredTest] = []
    for path, entries in yaml_files.items():
        found.extend(_yaml_tests(path, entries))
    for path, name, layer in skills:
        found.extend(_skill_tests(path, name, layer))
    return found


def _yaml_tests(path: str, entries: list[tuple[str, str, str]]) -> Iterable[DeclaredTest]:
    from mdagent.declarations.declarations import read_yaml_file

    data, _ = read_yaml_file(Path(path))
    if not isinstance(data, dict):
        return
    for section, name, layer in entries:
        decl = (data.get(section) or {}).get(name)
        tests = decl.get("tests") if isinstance(decl, dict) else None
        kind = "tool" if section == "tools" else "command"
        yield from _entries(tests, data, [section, name, "tests"], kind, name, path, layer)


def _skill_tests(path: str, name: str, layer: str) -> Iterable[DeclaredTest]:
    from mdagent.declarations.skills import _load_front_matter, split_front_matter

    try:
        text = Path(path).read_text(encoding="utf-8")
        fm_text, _, _ = split_front_matter(text, path)
        meta = _load_front_matter(fm_text, path, [])
    except (OSError, UnicodeError, MdagentError):
        return  # the skill loaded a moment ago; `agent check` says what broke since
    if isinstance(meta, dict):
        yield from _entries(meta.get("tests"), meta, ["tests"], "command", name, path, layer)


def _entries(tests, data, pointer, kind, name, path, layer) -> Iterable[DeclaredTest]:
    from mdagent.core.yamlsource import plain, position

    if not isinstance(tests, list):
        return
    for i, entry in enumerate(tests):
        if isinstance(entry, dict):
            line, col = position(data, [*pointer, i])
            yield DeclaredTest(kind, name, plain(entry), path, line, col, layer)


def select(
    tests: list[DeclaredTest],
    names: Iterable[str] = (),
    layers: Iterable[str] = (),
    pattern: str | None = None,
) -> list[DeclaredTest]:
    """The tests of ``names`` (``/name`` or ``name``), ``layers`` (a kind or a folder)
    and whose label contains ``pattern`` (case-insensitive)."""
    wanted = {n.lstrip("/") for n in names}
    chosen = [t for t in tests if not wanted or t.name in wanted]
    layer_list = list(layers)
    if layer_list:
        folders = [str(Path(x).expanduser().resolve()) for x in layer_list]
        chosen = [
            t
            for t in chosen
            if t.layer in layer_list or any(t.path.startswith(f + os.sep) for f in folders)
        ]
    if pattern:
        chosen = [t for t in chosen if pattern.lower() in t.label.lower()]
    return chosen


# -- running them -------------------------------------------------------------------


def run_tests(runtime: Any, tests: list[DeclaredTest]) -> list[Outcome]:
    """Run each test in its own copy of ``runtime``'s workspace; their outcomes.

    Each test runs with its copy as the process's working folder too (see
    :func:`run_one`); afterwards the process is back where it was, unless
    something a test started still runs (:class:`WorkingFolder`).
    """
    if not tests:
        return []
    _check_size(runtime.workdir)
    folder = WorkingFolder()
    try:
        return [run_one(runtime, test, folder) for test in tests]
    finally:
        folder.leave()


def run_one(runtime: Any, test: DeclaredTest, folder: WorkingFolder | None = None) -> Outcome:
    """Run ``test`` in a fresh copy of the workspace and judge its result.

    The copy is the test's workspace and, while it runs, the process's
    working folder: a ``handler:`` tool is Python inside this process, so
    ``open("out.txt", "w")`` in it writes where the process stands, and
    that must be the copy, never the real workspace.
    """
    own = folder is None
    folder = folder or WorkingFolder()
    try:
        with tempfile.TemporaryDirectory(prefix="agent-test-") as tmp:
            copy = _copy_workspace(runtime, Path(tmp))
            try:
                with folder.inside(copy.cwd if copy.cwd.is_dir() else copy.workdir):
                    result, status = _call(copy, test)
            except MdagentError as err:  # a usage mistake, an unavailable tool: the test sees it
                result, status = {"ok": False, "error": str(err)}, err.exit_code
            except Exception as err:  # one broken test must not hide the others' outcomes
                result = {"ok": False, "error": f"internal error: {type(err).__name__}: {err}"}
                status = 1
    finally:
        if own:
            folder.leave()
    return Outcome(test, judge(test.entry.get("expect") or {}, result, status), result, status)


class WorkingFolder:
    """The process's working folder during ``agent test``: a test's copy, then home again.

    Python cannot stop a thread: a handler that ran past its ``timeout``
    (or a thread it started) may still be running when its test is over.
    Going home then would let it write into the real workspace, so while a
    thread a test started is alive the process stays in that test's copy,
    which is deleted with the test: what such a thread writes by a relative
    path fails instead of landing in the workspace. The next test moves to
    its own copy, and :meth:`leave` goes home only once no such thread runs.
    """

    def __init__(self) -> None:
        self.home = os.getcwd()
        self.straying: list[threading.Thread] = []

    @contextlib.contextmanager
    def inside(self, copy: Path) -> Iterator[None]:
        """The process in ``copy`` for the block; then home, unless a thread it started runs."""
        before = set(threading.enumerate())
        os.chdir(copy)
        try:
            yield
        finally:
            started = [t for t in threading.enumerate() if t not in before]
            self.straying = [t for t in [*self.straying, *started] if t.is_alive()]
            if not self.straying:
                os.chdir(self.home)

    def leave(self) -> None:
        """Back home, unless a thread a test started is still alive (see the class)."""
        self.straying = [t for t in self.straying if t.is_alive()]
        if not self.straying:
            with contextlib.suppress(OSError):
                os.chdir(self.home)


def _copy_workspace(runtime: Any, tmp: Path) -> Any:
    """A Runtime like ``runtime`` whose workspace is a fresh copy under ``tmp``."""
    from mdagent.registry.compile import compile_registry
    from mdagent.runtime.approvers import RefusingApprover
    from mdagent.runtime.runtime import Runtime

    source = Path(runtime.workdir)
    target = tmp / (source.name or "workspace")
    try:
        shutil.copytree(
            source,
            target,
            symlinks=True,
            ignore=lambda _dir, names: [n for n in names if n in SKIPPED_FOLDERS],
        )
    except (OSError, shutil.Error) as err:
        raise ToolFailed(f"cannot copy the workspace for the tests: {err}") from None
    options = runtime.options.copy()
    # --layer folders given relative to where agent ran must still name them.
    options.layers = [str((runtime.cwd / p).resolve()) for p in runtime.options.layers]
    try:
        rel = runtime.cwd.relative_to(source)
    except ValueError:
        rel = Path()
    copy = Runtime(options, cwd=target / rel)
    # Compiled, not loaded: the registry cache is keyed by folder and a
    # temporary folder's entry would only be litter in the state folder.
    copy.__dict__["compiled"] = compile_registry(copy.layers)[0]
    # As trusted as the workspace it copies (mdagent.runtime.trust): an untrusted one's
    # hooks do not run around its tests, and its looser settings do not apply.
    copy.__dict__["trust"] = runtime.trust
    # Its trust is the workspace's: checked again there before each hook (the copy has no record).
    copy.trust_lapsed_now = runtime.trust_lapsed_now  # type: ignore[method-assign]
    # Nobody is asked during a test, not even on a terminal: a prompt skill's
    # turn builds its policy through this method, and an ask must be a refusal.
    copy.policy = functools.partial(Runtime.policy, copy, approver=RefusingApprover())
    return copy


def _check_size(workdir: Path) -> None:
    files = size = 0
    for folder, dirs, names in os.walk(workdir):
        dirs[:] = [d for d in dirs if d not in SKIPPED_FOLDERS]
        files += len(names)
        for name in names:
            with contextlib.suppress(OSError):  # gone meanwhile: nothing to copy
                size += os.lstat(os.path.join(folder, name)).st_size
        if files > MAX_COPY_FILES or size > MAX_COPY_BYTES:
            raise UsageError(
                f"the workspace {workdir} is too large to copy for each test "
                f"(more than {MAX_COPY_FILES} files or {MAX_COPY_BYTES >> 20} MiB); "
                "run agent test from a smaller project"
            )


def _call(runtime: Any, test: DeclaredTest) -> tuple[dict[str, Any], int]:
    """The result of the test's call as a dict (``ok`` included) and its exit status."""
    from mdagent.runtime.person import exit_status
    from mdagent.safety.policy import Policy

    runtime.check_settings()
    entry = test.entry
    approve = bool(entry.get("approve"))
    if test.kind == "command":
        command = runtime.registry.command(test.name)
        if command is not None and command.kind == "prompt":
            return _prompt_turn(runtime, test, command)
    policy = Policy(
        runtime.settings,
        workdir=runtime.workdir,
        store=runtime.store,
        # No approver: nobody to ask, an ask is a refusal, unless approve: true.
        approve_all=approve,
        project_layer=runtime.project_layer,
    )
    box = runtime.toolbox(policy=policy)
    box.audit = None  # the calls touched a throwaway copy: nothing to account for
    from mdagent.agent.skillrunner import SkillRunner

    ctx = runtime.context(box, caller="test", skill_runner=SkillRunner())
    ctx = ctx.replace(approve_all=approve)
    tool_name, args = _arguments(runtime, test)
    usage = bool(box.tool_for(tool_name).validate(args))
    result = box.run(tool_name, args, ctx)
    # Arguments that do not fit are a usage error, as for `agent /name` (exit 2).
    return result.to_dict(), 2 if usage and not result.ok else exit_status(result)


def _prompt_turn(runtime: Any, test: DeclaredTest, command: Any) -> tuple[dict[str, Any], int]:
    """A prompt skill's turn on a scripted model: its answer as ``output``, its prompt as ``prompt``.

    The turn is the one ``agent /name`` runs (:func:`mdagent.agent.ask.run_prompt_skill`)
    with the fake provider replaying the test's ``model.script``; ``approve:
    true`` is ``--yes`` for the turn's calls. Its session is removed after.
    """
    import contextlib
    import io
    import shlex

    import yaml

    from mdagent.agent.ask import run_prompt_skill

    entry = test.entry
    script = (entry.get("model") or {}).get("script")
    if script is None:
        raise UsageError(
            f"/{test.name} is a prompt skill: its test needs `model: {{script: [...]}}`"
        )
    script_file = Path(runtime.workdir).parent / "model-script.yaml"  # outside the workspace
    script_file.write_text(yaml.safe_dump(script, allow_unicode=True), encoding="utf-8")
    options = runtime.options
    options.provider, options.script, options.base_url = "fake", str(script_file), None
    options.json, options.yes = True, bool(entry.get("approve"))
    argv = entry.get("argv", "")
    words = [str(w) for w in argv] if isinstance(argv, list) else shlex.split(str(argv))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = run_prompt_skill(runtime, command, words)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("{")]
    turn = json.loads(lines[-1]) if lines else {}
    prompt = ""
    session = turn.get("session")
    if session:
        prompt = "\n".join(
            _content_text(m.get("content"))
            for m in runtime.store.messages(session)
            if m.get("role") == "user"
        )
        runtime.store.delete_session(session)  # the turn ran in a throwaway workspace
    error = turn.get("error") or err.getvalue().strip().removeprefix("agent: ") or None
    result = {
        "ok": status == 0,
        "output": turn.get("answer") or "",
        "prompt": prompt,
        "tool_calls": turn.get("tool_calls") or [],
        "steps": turn.get("steps"),
    }
    if status != 0 and error:
        result["error"] = error
    return result, status


def _content_text(content: Any) -> str:
    """The text of a message's content (a string, or a list of parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _arguments(runtime: Any, test: DeclaredTest) -> tuple[str, dict[str, Any]]:
    entry = test.entry
    if test.kind == "tool":
        spec = runtime.tool_spec(test.name)
        if spec is None:
            raise UsageError(f"tool {test.name!r} is not in the registry")
        if "args" in entry or "argv" not in entry:
            return spec.name, dict(entry.get("args") or {})
        from mdagent.cli.policycheck import call_arguments

        argv = entry["argv"]
        text = argv if isinstance(argv, str) else json.dumps(argv)
        return spec.name, call_arguments(spec, text)
    from mdagent.core.specs import unmet_requirement
    from mdagent.runtime.person import resolve_command
    from mdagent.tools.dispatch import build_call

    command, tool_spec = resolve_command(runtime, test.name)
    if tool_spec is None:
        raise UsageError(f"/{test.name} is a prompt skill: its test needs a scripted model")
    reason = runtime.unavailable(tool_spec) or unmet_requirement(command.requires)
    if reason:
        raise ToolFailed(f"/{command.name} is unavailable: {reason}")
    if "args" in entry:
        return tool_spec.name, dict(entry["args"] or {})
    argv = entry.get("argv", "")
    if isinstance(argv, list):
        call = build_call(command, tool_spec, argv=[str(w) for w in argv])
    else:
        call = build_call(command, tool_spec, text=str(argv))
    return call.tool, call.args


# -- judging ------------------------------------------------------------------------


def output_text(result: Mapping[str, Any]) -> str:
    """What a person would read of ``result``: its output, else its stdout and stderr."""
    if result.get("output") is not None:
        return str(result["output"])
    if "stdout" in result or "stderr" in result:
        return (result.get("stdout") or "") + (result.get("stderr") or "")
    return ""


def judge(expect: Mapping[str, Any], result: Mapping[str, Any], status: int) -> list[str]:
    """What of ``expect`` does not hold for ``result`` (empty: the test passed)."""
    failures: list[str] = []
    text = output_text(result)
    error = str(result.get("error") or "")
    if "ok" in expect and bool(result.get("ok")) != expect["ok"]:
        why = f" ({_short(error)})" if error else ""
        failures.append(
            f"expected ok: {_yaml_bool(expect['ok'])}, got {_yaml_bool(not expect['ok'])}{why}"
        )
    if "exit" in expect and status != expect["exit"]:
        failures.append(f"expected exit {expect['exit']}, got {status}")
    if "denied" in expect and (result.get("code") == "DENIED") != bool(expect["denied"]):
        failures.append(f"expected the call to be denied, got {_verdict(result)}")
    if "error" in expect and str(expect["error"]) not in error:
        got = f"error {_short(error)}" if error else "no error"
        failures.append(f"expected an error containing {_short(expect['error'])}, got {got}")
    if "output" in expect and text.rstrip("\n") != str(expect["output"]).rstrip("\n"):
        failures.append(
            f"expected output {_short(expect['output'])}, got {_short(text)}"
            + _diff(str(expect["output"]), text)
        )
    contains = expect.get("contains")
    for piece in [contains] if isinstance(contains, str) else contains or []:
        if str(piece) not in text:
            failures.append(f"expected output containing {_short(piece)}, got {_short(text)}")
    if "matches" in expect:
        try:
            found = re.search(str(expect["matches"]), text)
        except re.error as err:
            failures.append(f"matches: not a regular expression: {err}")
        else:
            if found is None:
                failures.append(
                    f"expected output matching /{expect['matches']}/, got {_short(text)}"
                )
    prompt_contains = expect.get("prompt_contains")
    prompt = str(result.get("prompt") or "")
    for piece in [prompt_contains] if isinstance(prompt_contains, str) else prompt_contains or []:
        if str(piece) not in prompt:
            failures.append(f"expected the prompt to contain {_short(piece)}, got {_short(prompt)}")
    for pointer, want in (expect.get("json") or {}).items():
        got = resolve_pointer(result, str(pointer))
        if got is _MISSING:
            failures.append(f"expected {pointer or '/'} = {_json(want)}, got nothing there")
        elif got != want:
            failures.append(f"expected {pointer or '/'} = {_json(want)}, got {_json(got)}")
    return failures


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at JSON pointer ``pointer`` (RFC 6901) in ``document``, or ``_MISSING``.

    A string met on the way down that holds JSON is read as JSON: a tool's
    output is often a JSON text, and ``/output/count`` should reach into it.
    """
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        return _MISSING
    node = document
    for raw in pointer[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, str):
            try:
                node = json.loads(node)
            except ValueError:
                return _MISSING
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return _MISSING
    return node


def _verdict(result: Mapping[str, Any]) -> str:
    if result.get("ok"):
        return "it ran"
    return f"a failure that is not a denial ({_short(result.get('error') or '')})"


def _yaml_bool(value: Any) -> str:
    return "true" if value else "false"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(str(value), ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 4] + '…"'


def _diff(want: str, got: str, limit: int = 12) -> str:
    """A short unified diff of the expected and the actual output (empty for one-liners)."""
    import difflib

    if "\n" not in want.rstrip("\n") and "\n" not in got.rstrip("\n"):
        return ""
    lines = list(
        difflib.unified_diff(
            want.rstrip("\n").splitlines(),
            got.rstrip("\n").splitlines(),
            "expected",
            "got",
            lineterm="",
            n=1,
        )
    )
    if len(lines) > limit:
        lines = [*lines[:limit], f"… ({len(lines) - limit} more diff lines)"]
    return "".join(f"\n{line}" for line in lines)
