"""The environment children see: this process's, minus anything that looks like a secret.

A tool's child process (``exec``, ``run:``, ``shell:``, hooks) gets the
scrubbed environment, so a command a model chose cannot read an API key out
of ``env``. Names are matched against globs, case-insensitively:
``*KEY*`` drops ``MY_API_KEY`` and ``ssh_keyfile`` alike.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from fnmatch import translate
from functools import lru_cache

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

DEFAULT_EXCLUDE = ["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*CREDENTIAL*"]


def _matches(name: str, patterns: Iterable[str]) -> bool:
    return _pattern(tuple(str(p).upper() for p in patterns)).match(name.upper()) is not None


@lru_cache(maxsize=32)
def _pattern(patterns: tuple[str, ...]) -> re.Pattern[str]:
    # One regex for the whole list: scrubbing runs on every start-up, over
    # every variable, and fnmatch per (name, pattern) pair adds up.
    if not patterns:
        return re.compile(r"(?!)")
    return re.compile("|".join(f"(?:{translate(p)})" for p in patterns))


def scrubbed_env(
    environ: Mapping[str, str],
    exclude: Iterable[str] = DEFAULT_EXCLUDE,
    include: Iterable[str] = (),
) -> dict[str, str]:
    """``environ`` without the variables whose name matches an ``exclude`` glob.

    A name that matches an ``include`` entry (an exact name or a glob) is
    kept even when it matches ``exclude``. Matching ignores case.
    """
    exclude = list(exclude)
    include = list(include)
    return {
        name: value
        for name, value in environ.items()
        if not _matches(name, exclude) or _matches(name, include)
    }


def env_rules(settings: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """``(exclude, include)`` from ``settings["policy"]["env"]``, with the defaults.

    ``exclude`` from the settings *adds* to :data:`DEFAULT_EXCLUDE`: the five
    default patterns always apply, so a layer that names one more pattern
    cannot let API keys through by accident. The only way to pass a
    secret-looking variable is to list it under ``include``.
    """
    policy = (settings or {}).get("policy") or {}
    env = (policy.get("env") or {}) if isinstance(policy, Mapping) else {}
    exclude = env.get("exclude") if isinstance(env, Mapping) else None
    include = env.get("include") if isinstance(env, Mapping) else None
    extra = [] if exclude is None else [str(p) for p in _as_list(exclude)]
    exclude = [*DEFAULT_EXCLUDE, *(p for p in extra if p not in DEFAULT_EXCLUDE)]
    include = [] if include is None else [str(p) for p in _as_list(include)]
    return exclude, include


def _as_list(value: Any) -> list[Any]:
    # A lone string in YAML (`exclude: "*KEY*"`) means a one-item list.
    return [value] if isinstance(value, str) else list(value)


def child_env(
    settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment for a child process: ``environ`` (default ``os.environ``) scrubbed.

    The rules come from ``settings["policy"]["env"]`` (see :func:`env_rules`).
    """
    exclude, include = env_rules(settings)
    return scrubbed_env(os.environ if environ is None else environ, exclude, include)


def env_for(ctx: Any) -> dict[str, str]:
    """The environment a tool call's children get: ``ctx.env`` when the caller
    built it (the runtime does, once per process), else scrubbed from the settings.

    Anyone's but a person's call (a model's, another agent's) also gets the
    git settings of :func:`with_git_safety`.
    """
    env = getattr(ctx, "env", None)
    env = dict(env) if env is not None else child_env(getattr(ctx, "settings", None))
    return env if getattr(ctx, "caller", None) == "person" else with_git_safety(env)


# Git settings a model's commands always run with. safe.bareRepository=explicit:
# git uses a bare repository only when told to (--git-dir, GIT_DIR), never one
# it finds on its own, so `cd src/evil && git status` cannot run the
# configuration (aliases, core.fsmonitor) of a folder a model wrote.
GIT_SAFETY = (("safe.bareRepository", "explicit"),)


def with_git_safety(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with :data:`GIT_SAFETY` added as command-line configuration.

    Appended after any ``GIT_CONFIG_COUNT`` entries already there (the last
    value of a setting wins), and to ``GIT_CONFIG_PARAMETERS`` when set, which
    git reads after them. A ``GIT_CONFIG_COUNT`` that is not a number is left
    alone: git then refuses to run at all.
    """
    out = dict(env)
    count = out.get("GIT_CONFIG_COUNT", "0")
    if not re.fullmatch(r"[0-9]+", count):
        return out
    n = int(count)
    for key, value in GIT_SAFETY:
        out[f"GIT_CONFIG_KEY_{n}"] = key
        out[f"GIT_CONFIG_VALUE_{n}"] = value
        n += 1
    out["GIT_CONFIG_COUNT"] = str(n)
    if out.get("GIT_CONFIG_PARAMETERS"):
        added = " ".join(f"'{key}'='{value}'" for key, value in GIT_SAFETY)
        out["GIT_CONFIG_PARAMETERS"] = f"{out['GIT_CONFIG_PARAMETERS']} {added}"
    return out


def is_secret_name(name: str, settings: Mapping[str, Any] | None = None) -> bool:
    """Whether a variable called ``name`` is kept from children under ``settings``."""
    exclude, include = env_rules(settings)
    return _matches(name, exclude) and not _matches(name, include)
