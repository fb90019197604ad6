"""Shared test settings: ``SKIP_SLOW=1`` (or ``-m "not slow"``) skips the real-model tests;
``-m "not ray"`` and ``-m "not mlflow_server"`` leave out those that start a Ray cluster or an
MLflow server (markers declared in pyproject.toml).

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


DOC_BLOCK = "tests/docs/test_docs.py::test_doc_block["


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """After a run that ran the docs' blocks: how many ran, and the skipped ones by reason."""
    outcomes: dict[str, str] = {}
    reasons: dict[str, str] = {}
    for key in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(key, []):
            nodeid = getattr(report, "nodeid", "")
            if not nodeid.startswith(DOC_BLOCK) or outcomes.get(nodeid) == "failed":
                continue
            outcomes[nodeid] = "failed" if key == "error" else key
            if key == "skipped" and isinstance(report.longrepr, tuple):
                reasons[nodeid] = str(report.longrepr[2]).removeprefix("Skipped: ")
    if not outcomes:
        return
    counts = {k: sum(1 for o in outcomes.values() if o == k) for k in ("passed", "failed")}
    by_reason: dict[str, int] = {}
    for reason in reasons.values():
        by_reason[reason] = by_reason.get(reason, 0) + 1
    write = terminalreporter.write_line
    write(
        f"doc blocks: {counts['passed'] + counts['failed']} executed ({counts['passed']} passed, "
        f"{counts['failed']} failed), {len(reasons)} skipped"
    )
    for reason, count in sorted(by_reason.items(), key=lambda item: (-item[1], item[0])):
        write(f"  {count:3d} skipped: {reason}")
