"""Looking at the policy without running anything: ``agent policy`` and ``policy.tests``.

A **call** is written the way rules are, as ``TOOL`` or ``TOOL(TEXT)``
(``policy.tests`` entries, ``agent policy check 'exec(git push)'``):

- ``TOOL`` is a tool's name or alias (``bash`` is ``exec``); ``TOOL`` alone
  is a call without arguments;
- for ``exec``, ``TEXT`` is the command line, as is:
  ``exec(git status && rm -rf x)``;
- for the file tools (``read_file``, ``write_file``, ``edit_file``,
  ``glob``, ``grep``), ``TEXT`` is the ``path``: ``read_file(.env)``;
- for ``fetch``, ``TEXT`` is the ``url``: ``fetch(https://example.org/x)``;
- ``TEXT`` starting with ``{`` is a JSON object of arguments, for any tool:
  ``weather({"city": "Paris"})``;
- otherwise ``TEXT`` is split like a shell line and mapped onto the tool's
  parameters as ``agent /name`` does in ``parsed`` mode: ``key=value``,
  ``--key value``, then positional values in declared order:
  ``weather(city=Paris)`` or ``weather(Paris)``.

The verdict is the one a **model's** call would get (:meth:`Policy.explain
<mdagent.safety.policy.Policy.explain>`): no hook runs and nobody is asked, so it
is ``allow``, ``ask`` or ``deny``.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mdagent.core.catalog import EXEC_TOOLS, FILE_TOOLS, URL_TOOLS
from mdagent.core.errors import ConfigError, Problem, UsageError, unknown_tool
from mdagent.safety.policy import Policy
from mdagent.safety.rules import Rule, Source
from mdagent.safety.verdicts import Verdict

_CALL = re.compile(r"\s*([^()\s]+)\s*(?:\((.*)\))?\s*", re.S)


def split_call(text: str) -> tuple[str, str | None]:
    """``"exec(git push)"`` -> ``("exec", "git push")``; ``"fetch"`` -> ``("fetch", None)``.

    Raises :class:`UsageError` for text that is neither form.
    """
    match = _CALL.fullmatch(text)
    if not match:
        raise UsageError(f"expected `TOOL` or `TOOL(ARGUMENTS)`, got {text!r}")
    return match.group(1), match.group(2)


def call_arguments(spec: Any, text: str | None) -> dict[str, Any]:
    """The arguments ``TOOL(text)`` gives the tool ``spec`` (see the module doc)."""
    if text is None:
        return {}
    if text.lstrip().startswith("{"):
        try:
            args = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"{spec.name}: arguments are not valid JSON: {exc}") from None
        if not isinstance(args, dict):
            raise UsageError(f"{spec.name}: arguments must be a JSON object")
        return args
    key = _main_argument(spec.name)
    if key is not None:
        return {key: text}
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"{spec.name}: cannot split {text!r}: {exc}") from None
    return _parsed(spec, words)


def cli_call(registry: Any, tool: str, words: list[str]) -> tuple[Any, dict[str, Any]]:
    """The tool and arguments of ``agent policy check TOOL ARGS…``.

    ``TOOL(TEXT)`` alone is a call as :func:`split_call` reads it. For
    ``exec`` the words are the command (one word as is, several quoted and
    joined as a shell would need them); for file tools and ``fetch`` the one
    word is the path or URL; other tools get the words as in ``parsed`` mode.
    """
    if not words and "(" in tool:
        name, text = split_call(tool)
        spec = _tool(registry, name)
        return spec, call_arguments(spec, text)
    spec = _tool(registry, tool)
    key = _main_argument(spec.name)
    if not words:
        return spec, {}
    if spec.name in EXEC_TOOLS:
        return spec, {key: words[0] if len(words) == 1 else shlex.join(words)}
    if key is not None:
        if len(words) != 1:
            raise UsageError(f"{spec.name} takes one {key}, got {len(words)} words")
        return spec, {key: words[0]}
    if len(words) == 1 and words[0].lstrip().startswith("{"):
        return spec, call_arguments(spec, words[0])
    return spec, _parsed(spec, words)


def parse_call(registry: Any, text: str) -> tuple[Any, dict[str, Any]]:
    """The tool and arguments a call text names; :class:`UsageError` when it cannot."""
    name, inner = split_call(text)
    spec = _tool(registry, name)
    return spec, call_arguments(spec, inner)


def _main_argument(tool_name: str) -> str | None:
    if tool_name in EXEC_TOOLS:
        return "command"
    if tool_name in FILE_TOOLS:
        return "path"
    if tool_name in URL_TOOLS:
        return "url"
    return None


def _tool(registry: Any, name: str) -> Any:
    spec = registry.tool(name)
    if spec is None:
        raise UsageError(unknown_tool(name, registry.tools))
    return spec


def _parsed(spec: Any, words: list[str]) -> dict[str, Any]:
    from mdagent.core.specs import CommandSpec
    from mdagent.tools.dispatch import parse_words

    command = CommandSpec(name=spec.name, tool=spec.name, arg_mode="parsed")
    try:
        return parse_words(words, spec, command)
    except UsageError as exc:  # its usage line is for /name; the first line says what is wrong
        raise UsageError(str(exc).splitlines()[0].removeprefix("/")) from None


# -- the policy of a runtime ---------------------------------------------------------


def runtime_policy(runtime: Any) -> Policy:
    """The policy a model's calls meet in ``runtime``, its rules knowing where they were written."""
    return Policy(
        runtime.settings,
        workdir=runtime.workdir,
        project_layer=runtime.project_layer,
        sources=runtime.registry.sources,
    )


def model_context(runtime: Any) -> Any:
    """A context for judging a model's call in ``runtime`` (nothing is run)."""
    from mdagent.core.calls import ToolContext

    return ToolContext(
        caller="model",
        workdir=str(runtime.workdir),
        env=runtime.env,
        settings=runtime.settings,
        registry=runtime.registry,
    )


def policy_tests(runtime: Any) -> tuple[list[Problem], int]:
    """Run every ``policy.tests`` entry: the problems (one per failing test, at its line), how many ran.

    Each test is judged as a model's call against the merged policy of all
    layers (:meth:`Policy.evaluate`), hooks not run.
    """
    tests = [s for s in runtime.registry.sources if s.get("section") == "tests"]
    if not tests:
        return [], 0
    try:
        policy = runtime_policy(runtime)
    except ConfigError:
        return [], 0  # the broken settings are reported where they are
    ctx = model_context(runtime)
    problems = []
    # In a folder nobody trusted, the tests meet the policy as it stands there (mdagent.runtime.trust).
    untrusted = "" if runtime.trusted else "; this folder is not trusted: `agent trust`"
    for test in tests:
        entry = test.get("entry") or {}
        call, expect = str(entry.get("call", "")), entry.get("expect")
        where = (test["path"], int(test["line"]), int(test["col"]))
        try:
            spec, args = parse_call(runtime.registry, call)
        except UsageError as exc:
            problems.append(Problem(*where, "error", f"policy test `{call}`: {exc}"))
            continue
        verdict = policy.evaluate(spec, args, ctx)
        if verdict.decision != expect:
            decided = verdict.why
            if verdict.rule is not None and verdict.rule.source is not None:
                decided += f", {shown_source(verdict.rule.source)}"
            problems.append(
                Problem(
                    *where,
                    "error",
                    f"policy test failed: `{call}` is {verdict.decision}, expected {expect} "
                    f"({decided}{untrusted})",
                )
            )
    return problems, len(tests)


# -- showing it ----------------------------------------------------------------------


def shown_path(path: str) -> str:
    """``path`` relative to the working directory when inside it, ``~`` for home."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        home = str(Path.home())
        return "~" + path[len(home) :] if path.startswith(home + "/") else path


def shown_source(source: Source | None) -> str:
    """``.agents/config/agent.yaml:7 (project layer)``, or ``(added at run time)``."""
    if source is None:
        return "(added at run time)"
    layer = f" ({source.layer} layer)" if source.layer else ""
    return f"{shown_path(source.path)}:{source.line}{layer}"


def verdict_dict(tool: str, args: Mapping[str, Any], verdict: Verdict) -> dict[str, Any]:
    """``agent policy check --json``: the verdict as plain data."""
    return {
        "tool": tool,
        "args": dict(args),
        "decision": verdict.decision,
        "why": verdict.why,
        "rule": verdict.rule.text if verdict.rule is not None else None,
        "reason": verdict.reason,
        "source": _source_dict(verdict.rule),
        "matched": verdict.matched or None,
        "allow_rule": verdict.suggestion if verdict.decision != "allow" else None,
        "segments": [
            {
                "segment": s.text,
                "decision": s.decision,
                "why": s.why,
                "rule": s.rule.text if s.rule is not None else None,
                "reason": s.rule.reason if s.rule is not None else None,
                "source": _source_dict(s.rule),
            }
            for s in verdict.segments
        ],
    }


def _source_dict(rule: Rule | None) -> dict[str, Any] | None:
    if rule is None or rule.source is None:
        return None
    source = rule.source
    return {"path": source.path, "line": source.line, "col": source.col, "layer": source.layer}


def verdict_text(tool: str, args: Mapping[str, Any], verdict: Verdict) -> str:
    """``agent policy check``: the decision, what decided it and where, then each segment."""
    from mdagent.ui.console import table

    what = args.get(_main_argument(tool) or "") if _main_argument(tool) else None
    shown = what if isinstance(what, str) else json.dumps(dict(args), ensure_ascii=False)
    rows = [["decision:", verdict.decision], ["call:", f"{tool} {shown}".rstrip()]]
    why = verdict.why + (f" ({verdict.matched})" if verdict.matched else "")
    rows.append(["why:", why])
    if verdict.rule is not None:
        rows.append(["rule:", verdict.rule.text])
        rows.append(["layer:", shown_source(verdict.rule.source)])
    if verdict.reason:
        rows.append(["reason:", verdict.reason])
    if verdict.decision != "allow" and verdict.suggestion and verdict.asks != "rule":
        rows.append(["allow with:", verdict.suggestion])
    text = table(rows)
    if verdict.segments:
        segments = [
            [
                s.decision,
                s.text,
                s.rule.text if s.rule is not None else "-",
                shown_source(s.rule.source) if s.rule is not None else s.why,
            ]
            for s in verdict.segments
        ]
        lines = table(segments, ["VERDICT", "SEGMENT", "RULE", "WHERE"]).splitlines()
        text += "\nsegments:\n" + "\n".join("  " + line for line in lines)
    return text


def rule_rows(runtime: Any) -> list[dict[str, Any]]:
    """Every policy rule of every layer, highest layer first: kind, rule, reason, where."""
    out = []
    for item in runtime.registry.sources:
        if item.get("section") == "tests":
            continue
        rule = Rule.parse(item.get("entry"))
        out.append(
            {
                "kind": item["section"],
                "rule": rule.text,
                "reason": rule.reason,
                "layer": item.get("layer") or "",
                "path": item["path"],
                "line": item["line"],
                "col": item["col"],
            }
        )
    order = {"deny": 0, "ask": 1, "allow": 2}
    return sorted(out, key=lambda r: order[r["kind"]])  # stable: layers stay in order


def revoke(runtime: Any, rule: str) -> str:
    """Remove ``rule`` from ``policy.allow`` of the project layer; what happened, for the person.

    Raises :class:`UsageError` when that file has no such rule, naming the
    layer files that do.
    """
    from mdagent.core.defaults import settings_path
    from mdagent.declarations.edit import remove_allow_rule

    target = settings_path(runtime.project_layer)
    line = remove_allow_rule(target, rule)
    if line is None:
        elsewhere = [
            f"{shown_path(r['path'])}:{r['line']}"
            for r in rule_rows(runtime)
            if r["kind"] == "allow" and r["rule"] == rule.strip()
        ]
        hint = f"; it is in {', '.join(elsewhere)}: edit that file" if elsewhere else ""
        raise UsageError(
            f"no allow rule `{rule.strip()}` in {shown_path(str(target))} "
            f"(see: agent policy rules){hint}"
        )
    return f"removed allow rule `{rule.strip()}` from {shown_path(str(target))}:{line}"
