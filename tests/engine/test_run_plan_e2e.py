"""A run's plan, checked at the server: ``combee train`` prints the calls it will make before
the first of them, makes that many of each role, and ``--dry-run`` makes none."""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import COMBEE, run_combee

ROLE = re.compile(r"(?:^|, )([a-z_]+) (\d+(?:,\d{3})*)(?:-(\d+(?:,\d{3})*))?(?: \([^)]*\))?")


def plan_calls(output: str) -> dict[str, tuple[int, int]]:
    """The calls the plan line announced, by role: (least, most)."""
    line = next(line for line in output.splitlines() if line.startswith("plan: calls "))
    listed = line.removeprefix("plan: calls ").split(" (a range")[0]
    found = {}
    for match in ROLE.finditer(listed):
        least = int(match.group(2).replace(",", ""))
        most = int(match.group(3).replace(",", "")) if match.group(3) else least
        found[match.group(1)] = (least, most)
    return found


class FirstCallWitness:
    """The scripted ACE server's replies; at the first request it reads what the command has
    written to its stderr file so far."""

    def __init__(self, stderr: Path) -> None:
        self.stderr = stderr
        self.seen_first: str | None = None

    def __call__(self, body: Mapping[str, Any]) -> str:
        if self.seen_first is None:
            self.seen_first = self.stderr.read_text(encoding="utf-8")
        return ace_responder(body)


@pytest.mark.parametrize(
    ("flags", "generator"),
    [
        # The defaults: combee at batch size 40, its groups sized at run time; 8 training
        # rollouts, a validation of 8 and a test of 8; the gate scores 2 validation samples
        # before and after the update, and may narrow it down with a quarter of the batch's 16
        # learning calls: at most 8 rollouts.
        ((), (24, 24 + 8)),
        # naive at batch size 4, validating after each of its 2 batches; the gate: 2 scorings of
        # 2 samples, and a credit of 2 rollouts, per batch.
        (
            ("--strategy", "naive", "--batch-size", "4", "--val-every", "1"),
            (8 + 2 * 8 + 8, 8 + 2 * 8 + 8 + 2 * 6),
        ),
    ],
    ids=["combee", "naive-validating-every-batch"],
)
def test_a_small_run_makes_the_calls_its_plan_announced(
    tmp_path: Path, flags: tuple[str, ...], generator: tuple[int, int]
) -> None:
    stderr = tmp_path / "stderr.txt"
    witness = FirstCallWitness(stderr)
    with serve_in_thread(witness) as server, stderr.open("w", encoding="utf-8") as sink:
        done = subprocess.run(
            [COMBEE, "train", "--task", "formula", "--train-limit", "8", "--model", "sim",
             "--base-url", server.base_url, "--out", str(tmp_path / "run"), *flags],
            stdout=subprocess.PIPE, stderr=sink, text=True, timeout=180, check=False,
            env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
        )  # fmt: skip
        records = server.records
    output = stderr.read_text(encoding="utf-8")
    assert done.returncode == 0, output
    # Validation and test follow the training limit.
    assert "plan: 8 train, 8 val, 8 test" in output
    assert "train=8 val=8 test=8" in output
    announced = plan_calls(output)
    made = Counter(record.schema_name for record in records)
    assert set(made) == set(announced), (made, announced)
    for role, count in made.items():
        least, most = announced[role]
        assert least <= count <= most, (role, count, announced[role])
    assert announced["generator"] == generator
    assert announced["reflector"] == (8, 8)
    # The plan was on the terminal when the first call reached the server.
    assert witness.seen_first is not None
    assert "plan: calls " in witness.seen_first
    assert output.index("plan: calls ") < output.index("combee train task=")


def test_dry_run_prints_the_plan_and_makes_no_call(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_in_thread(ace_responder) as server:
        done = run_combee(
            "train", "--task", "formula", "--train-limit", "8", "--model", "sim",
            "--base-url", server.base_url, "--out", str(out), "--dry-run",
            "--price-prompt", "0.15", "--price-completion", "0.6",
        )  # fmt: skip
        records = server.records
    assert done.returncode == 0, done.stderr
    assert records == []
    assert not out.exists()
    announced = plan_calls(done.stdout)
    assert announced["generator"] == (24, 24 + 8)  # the gate: at most 8 rollouts
    assert announced["preflight"] == (1, 1)
    # 8 curate groups at most per copy (p=2): 16 curator calls, 15 merges, at 2,048 tokens each.
    most = 1 + 24 + 8 + 8 + 16 + 15
    assert f"completions at most {most * 2048:,} tokens" in done.stdout
    assert f"at most ${most * 2048 * 0.6 / 1e6:,.2f}" in done.stdout
