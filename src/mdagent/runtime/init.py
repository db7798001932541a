"""The first hour: what to say when no model is configured, and ``agent init``.

One place holds the three model choices the README shows (OpenAI, Anthropic,
a local Ollama) so the message ``agent ask`` prints without a key, the file
``agent init`` writes and the README cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from mdagent.core.defaults import settings_path

if TYPE_CHECKING:
    from mdagent.providers.config import ProviderConfig

#: Choice name -> (what it is, the ``model:`` section). The README's "Models" snippets.
MODEL_CHOICES: dict[str, tuple[str, str]] = {
    "openai": (
        "OpenAI (the key is read from OPENAI_API_KEY)",
        "model:\n  provider: openai\n  name: gpt-4o-mini\n",
    ),
    "anthropic": (
        "Anthropic (the key is read from ANTHROPIC_API_KEY)",
        "model:\n  provider: anthropic\n  name: claude-sonnet-4-5\n  max_tokens: 4096\n",
    ),
    "ollama": (
        "A local Ollama: its OpenAI-compatible endpoint, no key needed",
        "model:\n  provider: openai\n  base_url: http://localhost:11434/v1\n"
        "  name: qwen2.5-coder:7b\n",
    ),
}

#: The example skill ``agent init`` writes: a slash command a person runs at once.
EXAMPLE_SKILL = "hello"
EXAMPLE_SKILL_TEXT = """\
---
name: hello
description: Say hello (an example command written by agent init; edit or delete it)
command-dispatch: tool
command-tool: exec
command-with: {command: "echo hello {ARGUMENTS}"}
argument-hint: '[name...]'
---
`agent /hello world` runs `echo hello world`: the typed words are quoted one
by one and put where `{ARGUMENTS}` stands. Point `command-with` at your own
program, or remove the four `command-` lines and write instructions for a
model here instead (a prompt skill: `agent /hello` then starts an agent turn).
"""


def missing_key(config: ProviderConfig, environ: Mapping[str, str]) -> str | None:
    """Why ``config`` cannot work as it stands (no API key), or None when it may.

    A key is needed at the hosted OpenAI or Anthropic endpoint, and wherever
    ``model.api_key_env`` names a variable of its own (OpenRouter and the
    like); a local server at another URL needs none. Checked before any
    request, so a new user is told at once instead of after a connection.
    """
    from mdagent.providers.config import DEFAULTS

    defaults = DEFAULTS.get(config.provider)
    if defaults is None:  # the fake provider, or an unknown one get_provider reports
        return None
    variable = config.api_key_env or defaults["api_key_env"]
    if environ.get(variable):
        return None
    base_url = (config.base_url or defaults["base_url"]).rstrip("/")
    hosted = base_url == defaults["base_url"].rstrip("/")
    if not hosted and variable == defaults["api_key_env"]:
        return None
    model = config.model or defaults["model"]
    lines = [
        f"no API key: the model would be {config.provider} {model} at {base_url}, "
        f"and {variable} is not set",
        f"  set the key:  export {variable}=...   (model.api_key_env names another variable)",
        "  or choose a model in .agents/config/agent.yaml (`agent init` writes one):",
    ]
    for title, section in MODEL_CHOICES.values():
        lines.append("")
        lines.append(f"    # {title}")
        lines += [f"    {line}" for line in section.splitlines()]
    return "\n".join(lines)


def config_text(choice: str | None) -> str:
    """A commented agent.yaml with ``choice``'s model on and the others commented out."""
    parts = [
        "# mdagent settings for this project (written by `agent init`).\n"
        "# Settings merge over ~/.agents/config/agent.yaml and the bundled defaults;\n"
        "# `agent check` reports any mistake here at its line.\n"
        "#\n"
        "# The model `agent ask` and the interactive `agent` talk to. Flags\n"
        "# (--provider, --model, --base-url) and AGENT_PROVIDER / AGENT_MODEL /\n"
        "# AGENT_BASE_URL override it. model.api_key_env names the variable that\n"
        "# holds the key, if not the provider's own.\n"
    ]
    for name, (title, section) in MODEL_CHOICES.items():
        parts.append(f"\n# {title}\n")
        if name == choice:
            parts.append(section)
        else:
            parts.append("".join(f"# {line}\n" for line in section.splitlines()))
    parts.append(
        "\nagent:\n"
        "  # Fewer tools suit small local models: essential < standard < full.\n"
        f"  tier: {'essential' if choice == 'ollama' else 'full'}\n"
        "  # max_steps: 25       # model calls in one turn\n"
        "  # instructions: |     # added to the system prompt\n"
        "  #   Answer briefly.\n"
    )
    return "".join(parts)


def write_init(layer: Path, choice: str | None) -> list[tuple[Path, bool]]:
    """Write agent.yaml and the example skill under ``layer``; ``(path, written)`` each.

    An existing file is kept as it is (``written`` False): init never
    overwrites what a person wrote.
    """
    files = [
        (settings_path(layer), config_text(choice)),
        (layer / "skills" / EXAMPLE_SKILL / "SKILL.md", EXAMPLE_SKILL_TEXT),
    ]
    done = []
    for path, text in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(path, "x", encoding="utf-8") as fh:
                fh.write(text)
        except FileExistsError:
            done.append((path, False))
            continue
        done.append((path, True))
    return done
