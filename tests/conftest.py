"""Shared test settings: ``SKIP_SLOW=1`` (or ``-m "not slow"``) skips the real-model tests."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("SKIP_SLOW") != "1":
        return
    skip = pytest.mark.skip(reason="SKIP_SLOW=1 skips the real local-model tests")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
