"""Combee's log records on the terminal while a command runs: warnings always, and the
embedded model's progress lines (a slow call says how far it got instead of going silent)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.markup import escape

from combee.cli.flags import cli_message
from combee.errors import CombeeError

PROGRESS_LOGGER = "combee.llm.local"

MAX_WARNINGS_SHOWN = 20
"""Warnings printed per command; the rest (a failing endpoint can cause one per sample) stay in
the run's ``run.log``."""


class ConsoleLog(logging.Handler):
    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console
        self.warnings = 0

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = escape(_with_flags(record).getMessage())
        except (TypeError, ValueError):
            message = escape(str(record.msg))
        if record.levelno >= logging.WARNING:
            self.warnings += 1
            if self.warnings <= MAX_WARNINGS_SHOWN:
                self.console.print(f"[yellow]warning:[/] {message}", highlight=False)
            elif self.warnings == MAX_WARNINGS_SHOWN + 1:
                self.console.print("[yellow]warning:[/] more warnings are written to run.log only")
        elif record.name.startswith(PROGRESS_LOGGER):
            self.console.print(f"[dim]{message}[/]", highlight=False)


def _with_flags(record: logging.LogRecord) -> logging.LogRecord:
    """``record`` with each library error among its arguments naming flags, not parameters
    (``--max-tokens``, not ``max_tokens``)."""
    args = record.args
    if not isinstance(args, tuple) or not any(isinstance(a, CombeeError) for a in args):
        return record
    shown = tuple(cli_message(a) if isinstance(a, CombeeError) else a for a in args)
    return logging.makeLogRecord({**record.__dict__, "args": shown})


@contextmanager
def console_logging(console: Console) -> Iterator[None]:
    """Show warnings and the embedded model's progress on ``console`` until the block ends."""
    handler = ConsoleLog(console)
    handler.addFilter(lambda r: r.levelno >= logging.WARNING or r.name.startswith(PROGRESS_LOGGER))
    combee = logging.getLogger("combee")
    progress = logging.getLogger(PROGRESS_LOGGER)
    previous = progress.level
    progress.setLevel(logging.INFO)
    combee.addHandler(handler)
    try:
        yield
    finally:
        combee.removeHandler(handler)
        progress.setLevel(previous)
