"""Rich rendering for a person at a terminal: Markdown answers and output previews.

Imported only by the interactive session (and ``agent ask`` on a terminal):
rich costs start-up time ``agent /name`` never pays. Colour follows rich's
rules — only on a terminal, never with ``NO_COLOR`` set.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from mdagent.ui.display import Display

if TYPE_CHECKING:
    from mdagent.core.calls import Result

#: Lines of a tool's output shown under its outcome line.
PREVIEW_LINES = 3


def console(stream: Any = None) -> Any:
    """A rich console on ``stream`` (stdout): colour only on a terminal, none with NO_COLOR."""
    from rich.console import Console

    return Console(file=stream or sys.stdout, highlight=False, soft_wrap=False)


class MarkdownDisplay(Display):
    """A :class:`Display` that renders the answer as Markdown while it streams.

    The text so far is re-rendered a few times a second in a rich ``Live``
    region; when the answer ends, the region stays on the screen as the
    final rendering. Tool outcomes get a short preview of their output.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._answer = ""
        self._live: Any = None

    def text(self, delta: str) -> None:
        self._stop_spinner()
        if not self.show_text or not delta:
            return
        self._end_reasoning()
        from mdagent.core.escapes import visible_lines

        self._answer += visible_lines(delta)  # the model's escapes do not reach the terminal
        if self._live is None:
            from rich.live import Live

            self._live = Live(
                Unpadded(self._answer),
                console=console(self.out),
                refresh_per_second=8,
                vertical_overflow="visible",
            )
            self._live.start()
        else:
            self._live.update(Unpadded(self._answer))

    def end_text(self) -> None:
        if self._live is not None:
            self._live.update(Unpadded(self._answer), refresh=True)
            self._live.stop()
            self._live = None
            self._answer = ""
        super().end_text()

    def tool_outcome(
        self,
        name: str,
        result: Result,
        seconds: float | None = None,
        *,
        call_id: str | None = None,
        waited: float = 0.0,
    ) -> None:
        super().tool_outcome(name, result, seconds, waited=waited)
        for line in preview(result):
            self.note(self.fitted(f"    {line}"))


class Unpadded:
    """Markdown as rich renders it, without the blanks that pad each line to the width.

    A person copying an answer from the terminal gets no trailing spaces;
    padding with a background (a code block's) is kept.
    """

    def __init__(self, text: str) -> None:
        self.text = text

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.markdown import Markdown
        from rich.segment import Segment

        for line in console.render_lines(Markdown(self.text), options, pad=False):
            while line and line[-1].text.isspace() and not _has_background(line[-1]):
                line.pop()
            if line and not _has_background(line[-1]):
                last = line.pop()
                line.append(Segment(last.text.rstrip(), last.style, last.control))
            yield from line
            yield Segment.line()


def _has_background(segment: Any) -> bool:
    return segment.style is not None and segment.style.bgcolor is not None


def preview(result: Result, lines: int = PREVIEW_LINES) -> list[str]:
    """The first lines of a call's output, and how many more there are (collapsed)."""
    data = result.data
    text = ""
    for key in ("output", "stdout", "stderr", "content"):
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            text = value
            break
    shown = text.rstrip("\n").splitlines()
    cut = [line if len(line) <= 120 else line[:119] + "…" for line in shown[:lines]]
    if len(shown) > lines:
        cut.append(f"… {len(shown) - lines} more lines")
    return cut
