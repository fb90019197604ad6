"""The embedded model's progress line counts the tokens the call read and wrote (llama.cpp's
running counters), not the growth of its context, which a call first cuts back to a shared
prefix. Pure logic: the counters are given here."""

from __future__ import annotations

import itertools
import logging
import time

import pytest

from combee.llm.local.progress import CallWatch


def test_the_work_is_counted_while_the_context_holds_fewer_tokens_than_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="combee.llm.local")
    # 5,000 tokens read by earlier calls; this call reads or writes 40 between two reports,
    # while its context (cut back to a 100-token prefix) holds fewer tokens than the last one.
    counter = itertools.count(5000, 40)
    with CallWatch(lambda: next(counter), lambda: 180, "local, answer call", every_s=0.01):
        deadline = time.monotonic() + 30
        while len(caplog.records) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    lines = [record.getMessage() for record in caplog.records]
    assert len(lines) >= 2
    first, second = lines[:2]
    assert first.startswith("local, answer call: ")
    assert " 40 tokens read or written (" in first and "; 40 in the last 0 s)" in first
    assert " 80 tokens read or written (" in second and "; 40 in the last 0 s)" in second
    assert first.endswith(", 180 in the model's context")


def test_a_call_still_reading_its_first_batch_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="combee.llm.local")
    with CallWatch(lambda: 5000, lambda: 120, "local, curator call", every_s=0.01):
        deadline = time.monotonic() + 30
        while not caplog.records and time.monotonic() < deadline:
            time.sleep(0.01)
    line = caplog.records[0].getMessage()
    assert "reading the first batch of its prompt (120 tokens in the model's context)" in line
    assert "0 tokens read" not in line and "0.0 tokens/s" not in line
