"""The docs' runnable examples, run through the real ``agent`` (docs/_ext/runnable.py).

Each page's ``console runnable`` blocks run in order in a fresh empty folder
of their own, after the ``file=PATH`` blocks before them are written there,
with the hermetic AGENT_HOME, state dir and HOME of every test, no API key,
and the scripted model where a model is needed. What each command prints
must be what the page shows: a documented example that stops working fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from conftest import REPO, agent_executable

sys.path.insert(0, str(REPO / "docs" / "_ext"))

import docsgen  # noqa: E402
import runnable  # noqa: E402


def pages_with_examples() -> list[Path]:
    found = []
    for page in docsgen.pages():
        steps = runnable.steps(page.read_text(encoding="utf-8"))
        if any(isinstance(step, runnable.CommandStep) for step in steps):
            found.append(page)
    return found


PAGES = pages_with_examples()


def test_getting_started_shows_a_handful_of_runnable_examples():
    text = (REPO / "docs" / "getting-started.md").read_text(encoding="utf-8")
    commands = [s for s in runnable.steps(text) if isinstance(s, runnable.CommandStep)]
    assert len(commands) >= 8
    assert any("--script" in step.command and " ask " in step.command for step in commands)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_each_runnable_example_prints_what_its_page_shows(page, tmp_path):
    folder = tmp_path / "example"
    folder.mkdir()
    env = runnable.example_env(str(Path(agent_executable()).parent))
    where = page.relative_to(REPO).as_posix()
    failures = runnable.run_page(page.read_text(encoding="utf-8"), folder, env, where)
    assert not failures, "\n\n".join(failures)
