"""Progress in a Jupyter notebook: the console's lines as cell output, and one bar redrawn in
place through an updatable display (IPython's own; no ipywidgets needed)."""

from __future__ import annotations

import time
from typing import Protocol

from rich.console import Console
from rich.progress import Progress

from combee.progress.console import ConsoleProgress, bar

REDRAW_EVERY_S = 0.2
"""At most one redraw of the bar this often as samples finish (each is a message to the
notebook); a start, a new phase and the end are drawn at once."""


class _Display(Protocol):
    def update(self, obj: object) -> None: ...


class NotebookProgress(ConsoleProgress):
    """:class:`ConsoleProgress` for a notebook cell: its lines in the cell's output, and above
    them a single bar showing what the run is doing now (training, a validation, the test),
    left at its last state when the run ends."""

    def __init__(self, console: Console | None = None, *, evaluation_lines: bool = True) -> None:
        super().__init__(
            console or Console(force_jupyter=True, emoji=False), evaluation_lines=evaluation_lines
        )
        self._display: _Display | None = None
        self._drawn = 0.0

    @property
    def live(self) -> bool:
        return True

    def _new_bar(self) -> Progress:
        return bar(self.console, live=False)  # drawn by _redraw, not by Rich's live display

    def _redraw(self, *, now: bool = False) -> None:
        if self._progress is None:
            return
        moment = time.monotonic()
        if not now and moment - self._drawn < REDRAW_EVERY_S:
            return
        self._drawn = moment
        if self._display is None:
            self._display = _shown(self._progress)
        else:
            self._display.update(self._progress)


def _shown(progress: Progress) -> _Display:
    """Show ``progress`` (Rich renders it as HTML and text) in a display that can be updated."""
    from IPython.display import display

    handle: _Display = display(progress, display_id=True)  # type: ignore[no-untyped-call]
    return handle
