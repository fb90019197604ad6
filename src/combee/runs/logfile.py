"""A run's ``run.log``: Combee's log records while the run goes on."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from combee.files import append_whole
from combee.runs.layout import LOG_FILE
from combee.runs.run_dir import RunDir

logger = logging.getLogger(__name__)


class RunLog(logging.Handler):
    """Appends each record to the file as a whole line; once a write fails (a full disk), the
    line is left out, the file stays whole and the handler writes no more (never printing
    logging's own error report)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.failure: OSError | None = None
        self._append("")  # the file is there from the start, as the run's other files

    def emit(self, record: logging.LogRecord) -> None:
        if self.failure is not None:
            return
        try:
            self._append(self.format(record) + "\n")
        except Exception:  # a record that cannot be formatted: logging's own report
            self.handleError(record)

    def _append(self, line: str) -> None:
        try:
            append_whole(self.path, line)
        except OSError as error:
            self.failure = error


@contextmanager
def logging_to(run_dir: RunDir | None) -> Iterator[None]:
    """Send the ``combee`` loggers' records to ``run_dir/run.log`` until the block ends."""
    if run_dir is None:
        yield
        return
    handler = RunLog(run_dir.path / LOG_FILE)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("combee")
    previous = root.level
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(previous)
        handler.close()
    if handler.failure is not None:  # the run ended well: say that its log is not whole
        logger.warning(
            "%s: lines left out from the first that could not be written (%s)",
            handler.path,
            handler.failure.strerror or handler.failure,
        )
