"""JSON Schemas for the files authors write: SKILL.md front-matter, tool files, agent.yaml."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

TYPE_CHECKING = False  # not typing's: see mdagent.core.records
if TYPE_CHECKING:
    from typing import Any

HERE = Path(__file__).resolve().parent


@cache
def schema(name: str) -> dict[str, Any]:
    """The schema ``name`` (``skill``, ``declarations`` or ``settings``)."""
    return json.loads((HERE / f"{name}.json").read_text(encoding="utf-8"))


@cache
def validator(name: str) -> Any:
    """A compiled Draft 2020-12 validator for the schema ``name``."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema(name))


@cache
def check(name: str) -> Any:
    """The compiled check of the schema ``name`` (:func:`mdagent.core.fastcheck.compile_schema`),
    or None when it has a keyword the compiler does not know."""
    from mdagent.core.fastcheck import compile_schema

    return compile_schema(schema(name))
