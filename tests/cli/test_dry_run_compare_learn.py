"""``combee compare --dry-run`` and ``combee learn --dry-run``, checked at the scripted server: the
plan (calls by role) is printed and no call is made; the same command without ``--dry-run``
then makes the calls the plan announced."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee
from tests.engine.test_run_plan_e2e import plan_calls

GRID = ["--task", "formula", "--strategies", "naive,sequential", "--batch-sizes", "4",
        "--seeds", "0,1", "--train-limit", "4", "--val-limit", "0", "--test-limit", "2",
        "--no-gate", "--model", "sim", "--no-cache"]  # fmt: skip


def calls_in(line: str) -> dict[str, tuple[int, int]]:
    """The calls a plan line lists after ``calls``, by role: (least, most)."""
    return plan_calls("plan: calls " + line.split("calls ", 1)[1])


def test_compare_dry_run_prints_each_cell_and_the_grid_and_calls_nothing(tmp_path: Path) -> None:
    out = tmp_path / "grid"
    with serve_in_thread(ace_responder) as server:
        planned = run_combee("compare", *GRID, "--base-url", server.base_url, "--out", str(out),
                             "--dry-run")  # fmt: skip
        assert planned.returncode == 0, planned.stderr
        assert server.records == []
        assert not out.exists()
        lines = planned.stdout.splitlines()
        cells = [line for line in lines if re.match(r"plan: \w+-b\d+-s\d: ", line)]
        assert [line.split(":")[1].strip() for line in cells] == [
            "naive-b4-s0", "naive-b4-s1", "sequential-b1-s0", "sequential-b1-s1",
        ]  # fmt: skip
        assert all("4 train, 0 val, 2 test" in line for line in cells)
        grid_line = next(line for line in lines if line.startswith("plan: the grid, 4 cells: "))
        announced = calls_in(grid_line)
        # naive at 4: one curate call over the batch; sequential: one per sample.
        assert announced == {
            "preflight": (4, 4), "generator": (24, 24), "reflector": (16, 16),
            "curator": (2 + 8, 2 + 8),
        }  # fmt: skip
        trained = run_combee("compare", *GRID, "--base-url", server.base_url, "--out", str(out))
        made = Counter(record.schema_name for record in server.records)
    assert trained.returncode == 0, trained.stderr
    assert {role: (n, n) for role, n in made.items()} == announced


def test_learn_dry_run_prints_the_plan_and_calls_nothing(tmp_path: Path) -> None:
    out = tmp_path / "learned"
    flags = ["--traces", "tau-airline", "--limit", "8", "--strategy", "naive", "--batch-size",
             "4", "--model", "sim", "--no-cache", "--out", str(out)]  # fmt: skip
    with serve_in_thread(ace_responder) as server:
        planned = run_combee("learn", *flags, "--base-url", server.base_url, "--dry-run")
        assert planned.returncode == 0, planned.stderr
        assert server.records == []
        assert not out.exists()
        assert "plan: 8 train, 0 val, 0 test; 2 iterations" in planned.stdout
        line = next(x for x in planned.stdout.splitlines() if x.startswith("plan: calls "))
        announced = calls_in(line)
        assert announced == {"preflight": (1, 1), "reflector": (8, 8), "curator": (2, 2)}
        learned = run_combee("learn", *flags, "--base-url", server.base_url)
        made = Counter(record.schema_name for record in server.records)
    assert learned.returncode == 0, learned.stderr
    assert {role: (n, n) for role, n in made.items()} == announced
