"""Sphinx configuration: the docs are Markdown (MyST), built strictly in CI.

    pip install -e '.[docs]'
    python -m sphinx -W --keep-going -n -b html docs docs/_build/html

``-W`` turns every warning into an error: a broken link or anchor, a page
missing from the table of contents or a toctree entry with no page, and each
problem docs/_ext/docsgen.py finds (generated text out of date, a schema key
without a description, a key the docs name that the schema lacks).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

import docsources  # noqa: E402

project = "mdagent"
author = "the mdagent authors"
release = version = docsources.version()

extensions = ["myst_parser", "docsgen"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "_ext"]

# Headings up to ### get anchors, so pages may link to `page.md#a-heading`;
# a link to an anchor that does not exist is a warning (an error with -W).
myst_heading_anchors = 4
myst_enable_extensions = ["deflist"]

html_theme = "furo"
html_title = f"mdagent {release}"
