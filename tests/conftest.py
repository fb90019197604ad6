"""Shared test settings: ``SKIP_SLOW=1`` (or ``-m "not slow"``) skips the real-model tests.

Near-duplicate folding by embedding is on by default when the embed extra is installed; its
model load would add seconds to every run these tests start, so it is off here
(``COMBEE_DEDUP=0``, inherited by the CLI subprocesses) except where a test turns it on.
"""

from __future__ import annotations

import os

import pytest

os.environ["COMBEE_DEDUP"] = "0"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("SKIP_SLOW") != "1":
        return
    skip = pytest.mark.skip(reason="SKIP_SLOW=1 skips the real local-model tests")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
