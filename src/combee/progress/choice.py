"""Which progress display a Python caller gets: ``progress=`` of :func:`combee.train` and the
functions built on it."""

from __future__ import annotations

import sys
from typing import Literal

from rich.console import Console

from combee.core.loop import LoopObserver
from combee.errors import ConfigError
from combee.progress.console import ConsoleProgress
from combee.progress.notebook import NotebookProgress

ProgressArg = bool | LoopObserver | None
"""``None``: shown where a person is watching (a terminal or a notebook), else not; ``True``:
shown; ``False``: not; an observer: that one instead of Combee's."""

Place = Literal["notebook", "terminal", "elsewhere"]

NOTEBOOK_SHELL = "ZMQInteractiveShell"
"""IPython's shell class in a Jupyter kernel (JupyterLab, Notebook, VS Code; Colab's is a
subclass)."""


def place_of(*, shell: object | None, stderr_is_terminal: bool) -> Place:
    """Where the caller runs, from IPython's shell (None outside IPython) and whether stderr is
    a terminal. IPython in a terminal is a terminal."""
    if shell is not None and any(c.__name__ == NOTEBOOK_SHELL for c in type(shell).__mro__):
        return "notebook"
    return "terminal" if stderr_is_terminal else "elsewhere"


def shown_by_default(place: Place) -> bool:
    """Progress is shown where a person is watching; not in a pipe, a log file or CI."""
    return place != "elsewhere"


def current_place() -> Place:
    ipython = sys.modules.get("IPython")  # loaded by any IPython session; never imported here
    shell = ipython.get_ipython() if ipython is not None else None
    return place_of(shell=shell, stderr_is_terminal=sys.stderr is not None and sys.stderr.isatty())


def progress_observer(progress: ProgressArg) -> LoopObserver | None:
    """The observer that shows a run's progress as ``progress`` asks, or None."""
    if isinstance(progress, LoopObserver):
        return progress
    if progress is not None and not isinstance(progress, bool):
        raise ConfigError(
            f"takes True, False, None or a combee.LoopObserver (got {progress!r})",
            setting="progress",
        )
    place = current_place()
    if not (shown_by_default(place) if progress is None else progress):
        return None
    if place == "notebook":
        return NotebookProgress()
    return ConsoleProgress(Console(stderr=True, emoji=False))
