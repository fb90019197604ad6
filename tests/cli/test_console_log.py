"""What a command prints of Combee's log while it runs: warnings (at most 20), the embedded
model's progress lines, nothing else."""

from __future__ import annotations

import io
import logging

from rich.console import Console

from combee.cli.console_log import MAX_WARNINGS_SHOWN, console_logging


def test_warnings_are_capped_and_progress_is_shown_but_not_other_info() -> None:
    out = io.StringIO()
    with console_logging(Console(file=out, width=200, no_color=True)):
        for i in range(MAX_WARNINGS_SHOWN + 5):
            logging.getLogger("combee.core.scan").warning("call %d failed", i)
        logging.getLogger("combee.llm.local").info("curator call: 30 s so far")
        logging.getLogger("combee.api").info("resuming")
    lines = out.getvalue().splitlines()
    shown = [line for line in lines if line.startswith("warning: call")]
    assert len(shown) == MAX_WARNINGS_SHOWN
    assert "warning: more warnings are written to run.log only" in lines
    assert "curator call: 30 s so far" in lines and not any("resuming" in line for line in lines)
    # Outside the block nothing is attached any more.
    assert not logging.getLogger("combee").handlers
