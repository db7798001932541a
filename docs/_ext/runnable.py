"""Runnable examples in the docs: read them from a page, run them, compare what they print.

A page marks an example runnable in the fence's info string, after the
language (GitHub and MyST both read only the first word as the language):

    ```markdown file=.agents/skills/hello/SKILL.md
    ...the file's content...
    ```

    ```console runnable
    $ agent /hello world
    Hello, world!
    ```

A ``file=PATH`` block is written into the page's workspace (a fresh folder
per page) before the commands that follow it run. In a ``runnable`` block,
each line starting with ``$ `` is a command run by ``bash -c`` in the
workspace, with stdout and stderr together as a person sees them; the lines
up to the next ``$ `` are its output. A line ``...`` stands for any lines,
and ``...`` inside a line for any text. A command must exit 0; to show a
failure, print its status (``$ agent /x; echo "exit status $?"``).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import NamedTuple

FENCE = re.compile(r"^(?P<fence>```+)(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)\s*$", re.S | re.M)


class FileStep(NamedTuple):
    """A file the examples after it need."""

    line: int
    path: str
    content: str


class CommandStep(NamedTuple):
    """One ``$ command`` and the output the page shows for it."""

    line: int
    command: str
    expected: str


def steps(text: str) -> list[FileStep | CommandStep]:
    """The page's files and commands, in page order."""
    found: list[FileStep | CommandStep] = []
    for match in FENCE.finditer(text):
        words = match["info"].split()
        line = text.count("\n", 0, match.start()) + 1
        files = [w.removeprefix("file=") for w in words[1:] if w.startswith("file=")]
        if files:
            found.append(FileStep(line, files[0], match["body"]))
        if "runnable" in words[1:]:
            found.extend(_commands(match["body"], line + 1))
    return found


def _commands(body: str, first_line: int) -> list[CommandStep]:
    commands: list[CommandStep] = []
    command: list[str] | None = None
    output: list[str] = []
    start = first_line
    lines = body.splitlines()
    index = 0
    while index < len(lines):
        text = lines[index]
        if text.startswith("$ "):
            if command is not None:
                commands.append(CommandStep(start, "\n".join(command), "\n".join(output)))
            start, command, output = first_line + index, [text[2:]], []
            while command[-1].endswith("\\") and index + 1 < len(lines):
                index += 1
                command.append(lines[index])
        elif command is None:
            raise ValueError(f"line {first_line + index}: output before any '$ ' command")
        else:
            output.append(text)
        index += 1
    if command is not None:
        commands.append(CommandStep(start, "\n".join(command), "\n".join(output)))
    return commands


def matches(expected: str, actual: str) -> bool:
    """Whether ``actual`` is what ``expected`` shows (``...`` lines and text are wildcards)."""
    pattern = []
    for line in _lines(expected):
        if line == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*?".join(re.escape(part) for part in line.split("...")) + r"\n")
    return (
        re.fullmatch("".join(pattern), "".join(f"{line}\n" for line in _lines(actual))) is not None
    )


def _lines(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def run_page(text: str, workspace: Path, env: dict[str, str], where: str) -> list[str]:
    """Run a page's examples in ``workspace``; one message per example that did not hold."""
    failures = []
    for step in steps(text):
        if isinstance(step, FileStep):
            target = workspace / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.content, encoding="utf-8")
            continue
        done = subprocess.run(
            ["bash", "-c", step.command],
            cwd=workspace,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
            start_new_session=True,  # no terminal: nothing can wait on a question
        )
        if done.returncode != 0:
            failures.append(
                f"{where}:{step.line}: `{step.command}` exited {done.returncode}:\n{done.stdout}"
            )
        elif not matches(step.expected, done.stdout):
            failures.append(
                f"{where}:{step.line}: `{step.command}` printed\n{done.stdout}"
                f"--- the page shows\n{step.expected}\n"
            )
    return failures


def example_env(bin_dir: str) -> dict[str, str]:
    """The environment examples run in: ``agent`` first on PATH, no colour, no keys."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not re.search(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", k)
    }
    env.update(
        PATH=bin_dir + os.pathsep + env.get("PATH", ""),
        NO_COLOR="1",
        TERM="dumb",
        COLUMNS="100",
        LC_ALL="C.UTF-8",
    )
    return env
