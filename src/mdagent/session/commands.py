"""The slash-command registry of an interactive session (``/exit``, ``/tools``...)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from mdagent.core.specs import command_key

Completions = list[str] | Callable[[], Iterable[str]] | None
__all__ = ["Command", "Commands", "command_key"]


@dataclass(frozen=True)
class Command:
    """One registered command."""

    name: str
    description: str
    block: Callable[[str | None], object]
    completions: Completions = None


class Commands:
    """Named blocks run by ``/name [args]``."""

    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}

    def register(
        self, name: str, description: str = "", completions: Completions = None
    ) -> Callable[[Callable[[str | None], object]], Callable[[str | None], object]]:
        """Decorator: run the block for ``/name``; registering again replaces it.

        ``completions`` is a list of strings or a zero-argument callable
        returning them.
        """

        def register(block: Callable[[str | None], object]) -> Callable[[str | None], object]:
            key = command_key(name)
            self._commands[key] = Command(key, description, block, completions)
            return block

        return register

    def run(self, name: str, args: str | None = None) -> bool:
        """Run ``/name`` with the text after the name; False when there is no such command."""
        command = self._commands.get(command_key(name))
        if command is None:
            return False
        command.block(args)
        return True

    def names(self) -> list[str]:
        """Every command as ``/name``, sorted."""
        return sorted(f"/{k}" for k in self._commands)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        for key in sorted(self._commands):
            yield f"/{key}", self._commands[key].description

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and command_key(name) in self._commands

    def __len__(self) -> int:
        return len(self._commands)

    def completions_for(self, name: str, partial: str = "") -> list[str]:
        """Completions of ``/name`` that start with ``partial``."""
        command = self._commands.get(command_key(name))
        if command is None or command.completions is None:
            return []
        options = command.completions() if callable(command.completions) else command.completions
        return [o for o in options if str(o).startswith(partial)]

    def clear(self) -> None:
        """Forget every command."""
        self._commands.clear()
