"""``agent config show`` and ``agent doctor``: the effective configuration, and what works.

Both answer "what is this agent using, and why" without a person reading
every layer's agent.yaml: each setting with the layer it came from, the
model that would be used and whether its key variable is set (never the
key itself).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mdagent.runtime.runtime import Runtime


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"a.b": 1}``; lists and empty mappings are leaves."""
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}{key}."))
        return flat
    return {prefix.rstrip("."): value}


def layer_settings(runtime: Runtime) -> list[tuple[str, str, dict[str, Any]]]:
    """``(label, agent.yaml path, its settings)`` of each layer that has one, highest first."""
    from mdagent.core.defaults import SETTINGS_FILE
    from mdagent.declarations.declarations import load_settings

    found = []
    for layer in runtime.layers:
        if layer.foreign:  # other agents' settings files, as the compile read them
            found += [(layer.label, path, own) for path, own in foreign_settings(runtime, layer)]
            continue
        if layer.config_dir is None:
            continue
        path = layer.config_dir / SETTINGS_FILE
        if path.is_file():
            settings, _ = load_settings(path)  # problems: `agent check` reports them
            found.append((layer.label, str(path), settings))
    return found


def foreign_settings(runtime: Runtime, layer: Any) -> list[tuple[str, dict[str, Any]]]:
    """``(path, settings)`` of the other agents' settings files ``layer`` reads, highest first."""
    from mdagent.declarations import interop

    out = []
    for source, path in interop.settings_files(layer.kind, layer.path, os.environ):
        if interop.enabled(runtime.settings, source) and path.is_file():
            settings, _, _ = interop.read_settings(source, path, layer.kind)
            if settings:
                out.append((str(path), settings))
    return out[::-1]


def other_agents(runtime: Runtime) -> list[dict[str, str]]:
    """Every file of another agent mdagent reads here: ``{source, path, as}`` (issue 34)."""
    from mdagent.declarations import interop
    from mdagent.declarations.memory import memory_paths

    found = []
    for layer in runtime.layers:
        if layer.skills_only and interop.enabled(
            runtime.settings, interop.LAYER_SOURCES[layer.kind]
        ):
            source = interop.LAYER_SOURCES[layer.kind]
            found.append({"source": source, "path": str(layer.path), "as": "skills"})
        if not layer.foreign:
            continue
        for source, path in interop.settings_files(layer.kind, layer.path, os.environ):
            if interop.enabled(runtime.settings, source) and path.is_file():
                what = "policy rules" if source == "claude-permissions" else "mcp_servers"
                found.append({"source": source, "path": str(path), "as": what})
        for source, folder, suffix, prefix in interop.command_folders(
            layer.kind, layer.path, os.environ
        ):
            if interop.enabled(runtime.settings, source):
                for name, path in interop.command_files(folder, suffix, prefix):
                    found.append({"source": source, "path": str(path), "as": f"/{name}"})
    for path, _scope in memory_paths(Path.cwd(), Path(runtime.workdir), runtime.settings):
        found.append({"source": "memory", "path": str(path), "as": "system prompt"})
    return found


def model_summary(runtime: Runtime) -> dict[str, Any]:
    """The model ``agent ask`` would use, and whether its key variable is set."""
    from mdagent.core.errors import MdagentError
    from mdagent.providers.config import DEFAULTS, ProviderConfig
    from mdagent.runtime.init import missing_key

    given = {k: v for k, v in runtime.options.model_overrides.items() if v is not None}
    try:
        config = ProviderConfig.from_settings(runtime.settings, given, os.environ)
    except MdagentError as err:
        return {"error": str(err)}
    defaults = DEFAULTS.get(config.provider, {})
    variable = config.api_key_env or defaults.get("api_key_env")
    summary: dict[str, Any] = {
        "provider": config.provider,
        "model": config.model,
        "base_url": config.base_url,
        "api_key_env": variable,
        "key_set": bool(variable and os.environ.get(variable)),
        "key_needed": missing_key(config, {}) is not None,
    }
    return summary


def config_report(runtime: Runtime) -> dict[str, Any]:
    """Everything ``agent config show`` prints, as one JSON-ready object."""
    from mdagent.core.layers import FOREIGN_KINDS, state_dir

    layers = layer_settings(runtime)
    if not runtime.trusted:  # the project's settings count for what an untrusted folder keeps
        from mdagent.declarations.declarations import merge_settings
        from mdagent.registry.trustfacts import tighten

        workspace = ("project", FOREIGN_KINDS["project-foreign"])
        person = merge_settings([own for label, _, own in layers if label not in workspace])
        layers = [
            (label, path, tighten(own, person)[0] if label in workspace else own)
            for label, path, own in layers
        ]
    settings = {}
    for key, value in _flatten(runtime.settings).items():
        origin = "default"
        for label, path, own in layers:
            if key in _flatten(own) or any(k.startswith(key + ".") for k in _flatten(own)):
                origin = path if label in FOREIGN_KINDS.values() else label
                break
        settings[key] = {"value": value, "from": origin}
    mode = runtime.mode
    origin = mode.source
    if origin == "policy.mode":  # which layer said it
        origin = settings.get("policy.mode", {}).get("from", "default")
    return {
        "workspace": str(runtime.workdir),
        "state_dir": str(state_dir()),
        "mode": {"mode": mode.mode, "from": origin},
        "layers": [
            {"kind": layer.label, "path": str(layer.path)}
            | ({"settings": path} if (path := _settings_of(layer, layers)) else {})
            for layer in runtime.layers
        ],
        "model": model_summary(runtime),
        "trust": trust_summary(runtime),
        "settings": settings,
        "other_agents": other_agents(runtime),
    }


def trust_summary(runtime: Runtime) -> dict[str, Any]:
    """Whether the workspace is trusted (:mod:`mdagent.runtime.trust`), and what it would let act."""
    if runtime.compiled.trust is None:
        return {"state": "not needed", "items": []}
    state = runtime.trust
    return {
        "state": state.word,
        "since": state.since or None,
        "changes": list(state.changes),
        "items": [item.text for item in state.items],
    }


def trust_line(trust: dict[str, Any]) -> str:
    """One line about the workspace's trust, for ``config show`` and ``doctor``."""
    state = trust["state"]
    items = trust["items"]
    if state == "not needed":
        return "not needed: nothing here runs or loosens anything before you trust it"
    if state == "trusted":
        return f"trusted since {trust['since']} ({len(items)} item(s); agent trust --show)"
    if state == "lapsed":
        return f"lapsed: {'; '.join(trust['changes'])}; {len(items)} item(s) ignored (agent trust)"
    return f"not trusted: {len(items)} item(s) ignored (agent trust --show lists them)"


def _settings_of(layer: Any, layers: list[tuple[str, str, dict]]) -> str | None:
    from mdagent.core.defaults import SETTINGS_FILE

    if layer.config_dir is None:
        return None
    path = str(layer.config_dir / SETTINGS_FILE)
    return path if any(p == path for _, p, _ in layers) else None


def model_line(model: dict[str, Any]) -> str:
    """One line about the model: which, where, and the key variable's state."""
    if "error" in model:
        return f"model: {model['error']}"
    line = f"model: {model['provider']} {model['model']}"
    if model["base_url"]:
        line += f" at {model['base_url']}"
    if model["api_key_env"] and model["provider"] != "fake":
        state = "set" if model["key_set"] else "not set"
        if not model["key_set"] and not model["key_needed"]:
            state += ", not needed here"
        line += f" (key variable {model['api_key_env']}: {state})"
    return line


def print_config(report: dict[str, Any], echo=print) -> None:
    """``agent config show`` as text."""
    import json

    echo(f"workspace: {report['workspace']}")
    echo(f"state dir: {report['state_dir']}")
    echo(model_line(report["model"]))
    echo(f"trust: {trust_line(report['trust'])}")
    echo(f"mode: {report['mode']['mode']} ({report['mode']['from']})")
    echo("layers (highest precedence first):")
    for layer in report["layers"]:
        tail = f"  ({layer['settings']})" if "settings" in layer else ""
        echo(f"  {layer['kind']:<10} {layer['path']}{tail}")
    echo("settings:")
    width = max((len(k) for k in report["settings"]), default=0)
    for key, entry in report["settings"].items():
        value = json.dumps(entry["value"], ensure_ascii=False, default=str)
        echo(f"  {key:<{width}}  {value}  # {entry['from']}")
    if report.get("other_agents"):
        echo("other agents' files read (skills.interop turns a source off):")
        for item in report["other_agents"]:
            echo(f"  {item['source']:<18} {item['path']}  -> {item['as']}")


# -- doctor ---------------------------------------------------------------------------


def install_kind() -> str:
    """``editable (PATH)``, ``wheel`` or ``source tree``: how mdagent was installed."""
    import json
    from importlib import metadata

    try:
        dist = metadata.distribution("mdagent")
    except metadata.PackageNotFoundError:
        return "source tree (not installed)"
    text = dist.read_text("direct_url.json")
    if text:
        try:
            info = json.loads(text)
        except ValueError:
            info = {}
        if (info.get("dir_info") or {}).get("editable"):
            return f"editable ({info.get('url', '').removeprefix('file://')})"
    return f"wheel {dist.version}"


def probe(url: str, timeout: float = 2.0) -> str | None:
    """None when something answers HTTP at ``url`` within ``timeout`` seconds, else why not."""
    from mdagent.core.httpclient import load

    httpx = load()  # without its command line

    try:
        httpx.get(url, timeout=timeout)
    except httpx.TimeoutException:
        return f"no answer within {timeout:g} s"
    except httpx.HTTPError as err:
        return str(err) or type(err).__name__
    return None


def doctor_checks(runtime: Runtime) -> list[tuple[bool | None, str, str]]:
    """``(ok, what, detail)`` of each check ``agent doctor`` makes.

    ``ok`` is None for something optional that is not there (ripgrep): not a
    failure, and not a pass either (shown with ``-``, never ``✓ … not found``).
    """
    import shutil

    checks: list[tuple[bool | None, str, str]] = []
    version = ".".join(map(str, sys.version_info[:3]))
    checks.append((sys.version_info >= (3, 11), "python", f"{version} ({sys.executable})"))
    checks.append((True, "install", install_kind()))
    layers = ", ".join(f"{layer.label} {layer.path}" for layer in runtime.layers)
    checks.append((True, "layers", layers))
    registry = runtime.registry
    errors = len(registry.errors)
    warnings = sum(1 for p in registry.problems if p.severity == "warning")
    checks.append(
        (
            errors == 0,
            "check",
            f"{len(registry.tools)} tools, {len(registry.commands)} commands, "
            f"{len(registry.skills)} skills; {errors} error(s), {warnings} warning(s)"
            + (" (see: agent check)" if errors or warnings else ""),
        )
    )
    rg = shutil.which("rg")
    if rg:
        checks.append((True, "ripgrep", rg))
    else:
        checks.append(
            (None, "ripgrep", "not installed (optional): grep uses its slower Python search")
        )
    checks.append(_state_check())
    checks.append((True, "trust", trust_line(trust_summary(runtime))))
    checks.append(_model_check(runtime))
    return checks


def _state_check() -> tuple[bool, str, str]:
    import sqlite3

    from mdagent.store.store import default_path

    path = default_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=2)
        try:
            db.execute("BEGIN IMMEDIATE")  # takes the write lock: proves it is writable
            db.rollback()
        finally:
            db.close()
    except (OSError, sqlite3.Error) as err:
        return (False, "state", f"{path} is not writable: {err} (set AGENT_STATE_DIR)")
    return (True, "state", f"{path} writable")


def _model_check(runtime: Runtime) -> tuple[bool, str, str]:
    model = model_summary(runtime)
    if "error" in model:
        return (False, "model", model["error"])
    where = f"{model['provider']} {model['model']}"
    if model["provider"] == "fake":
        return (True, "model", f"{where} (scripted, nothing to reach)")
    if model["key_needed"] and not model["key_set"]:
        return (
            False,
            "model",
            f"{where} at {model['base_url']}: {model['api_key_env']} is not set "
            "(not probed; see: agent ask, agent init)",
        )
    problem = probe(model["base_url"])
    if problem:
        return (False, "model", f"{where}: {model['base_url']} unreachable: {problem}")
    return (True, "model", f"{where}: {model['base_url']} reachable")
