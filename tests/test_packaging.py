"""The built wheel: every subpackage ships, and the bundled layer is found from it.

``pyproject.toml`` lists the packages by hand (the bundled layer maps the
repository's ``skills/`` and ``config/`` into ``mdagent/bundled/``). A
subpackage left off that list still passes every other test, since they
run from the source checkout, and would ship broken: this test builds the
wheel and looks inside.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "mdagent"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the project's own files (nothing written to the checkout)."""
    copy = tmp_path_factory.mktemp("project")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc")
    for name in ("src", "skills", "config"):
        shutil.copytree(REPO / name, copy / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, copy / name)
    out = tmp_path_factory.mktemp("dist")
    build = (
        "import sys, setuptools.build_meta as backend\nprint(backend.build_wheel(sys.argv[1]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", build, str(out)],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


def _source_files() -> list[str]:
    return sorted(
        path.relative_to(PACKAGE.parent).as_posix()
        for path in PACKAGE.rglob("*")
        if path.is_file() and path.suffix in (".py", ".json") and "__pycache__" not in path.parts
    )


def test_every_subpackage_and_module_is_in_the_wheel(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = sorted(
        p.relative_to(PACKAGE.parent).as_posix()
        for p in PACKAGE.rglob("__init__.py")
        if "__pycache__" not in p.parts
    )
    assert len(packages) > 1
    assert [p for p in packages if p not in names] == []
    assert [f for f in _source_files() if f not in names] == []


def test_the_bundled_layer_is_found_in_the_installed_wheel(wheel, tmp_path):
    target = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(target)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import mdagent\n"
        "from mdagent.core.layers import bundled_layer_path\n"
        "print(mdagent.__file__); print(bundled_layer_path())\n"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(target)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    module, bundled = (Path(line) for line in done.stdout.splitlines())
    assert module.is_relative_to(target)
    assert bundled == target / "mdagent" / "bundled"
    skills = sorted(p.name for p in (bundled / "skills").iterdir())
    assert skills == sorted(p.name for p in (REPO / "skills").iterdir())
    assert (bundled / "config").is_dir()
