"""How a run shows its progress: bars and lines on a console (the CLI, a terminal), in a
notebook cell, or not at all (``progress=`` of :func:`combee.train`)."""

from combee.progress.choice import ProgressArg, progress_observer
from combee.progress.console import ConsoleProgress, success_text
from combee.progress.notebook import NotebookProgress

__all__ = [
    "ConsoleProgress",
    "NotebookProgress",
    "ProgressArg",
    "progress_observer",
    "success_text",
]
