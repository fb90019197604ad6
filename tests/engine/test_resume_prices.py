"""A run stopped by a kill and resumed from its folder alone keeps its prices: the resumed
attempt's calls are priced as the first attempt's were, and the whole run's cost is counted."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import combee
from combee.core.loop import LoopObserver
from combee.core.loop_state import LoopState
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import COMBEE

PRICES = (3.0, 15.0)


class StopAfterOne(LoopObserver):
    def on_checkpoint(self, state: LoopState[object]) -> None:
        raise KeyboardInterrupt  # as a kill would, once iteration 1 is saved


def test_a_resumed_run_keeps_its_prices(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with serve_in_thread(ace_responder) as server:
        llm = combee.llm.connect("sim", base_url=server.base_url, prices=PRICES)
        with pytest.raises(KeyboardInterrupt):
            combee.train(
                "formula", batch_size=2, train_limit=6, val_limit=0, test_limit=2, llm=llm,
                run_dir=run, observers=[StopAfterOne()],
            )  # fmt: skip
        config = json.loads((run / "config.json").read_text(encoding="utf-8"))
        assert config["endpoint"]["prices"] == list(PRICES)
        resumed = subprocess.run(
            [COMBEE, "train", "--resume", str(run)],
            capture_output=True, text=True, timeout=180, check=False,
            env={**os.environ, "NO_COLOR": "1"},
        )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    results = json.loads((run / "final_results.json").read_text(encoding="utf-8"))
    tokens = results["tokens"]  # every attempt's, per role
    expected = sum(
        (t["prompt"] * PRICES[0] + t["completion"] * PRICES[1]) / 1e6 for t in tokens.values()
    )
    assert expected > 0
    assert results["cost"] == pytest.approx(expected, rel=1e-3)


class StopInIteration2(LoopObserver):
    """Stops the run as iteration 2 turns to its curators: its rollouts and reflections are
    paid for and cached, but no checkpoint counts them."""

    def __init__(self) -> None:
        self.iteration = 0

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        self.iteration = iteration

    def on_phase(self, phase: str) -> None:
        if self.iteration == 2 and phase == "reduce":
            raise KeyboardInterrupt


def test_a_killed_iteration_replayed_on_resume_counts_as_spent(tmp_path: Path) -> None:
    settings: dict[str, object] = {
        "batch_size": 2, "train_limit": 6, "val_limit": 0, "test_limit": 2, "seed": 0,
    }  # fmt: skip
    with serve_in_thread(ace_responder) as server:

        def endpoint(cache: Path) -> combee.llm.Endpoint:
            return combee.llm.Endpoint(
                "sim", base_url=server.base_url, prices=PRICES, cache=str(cache)
            )

        whole = tmp_path / "whole"
        combee.train("formula", llm=endpoint(tmp_path / "whole.sqlite"), run_dir=whole, **settings)
        killed = tmp_path / "killed"
        with pytest.raises(KeyboardInterrupt):
            combee.train(
                "formula", llm=endpoint(tmp_path / "killed.sqlite"), run_dir=killed,
                observers=[StopInIteration2()], **settings,
            )  # fmt: skip
        combee.resume(killed)
        # Another run replaying the same cache saves what the cache holds.
        other = tmp_path / "other"
        combee.train("formula", llm=endpoint(tmp_path / "killed.sqlite"), run_dir=other, **settings)
    results = {
        name: json.loads((tmp_path / name / "final_results.json").read_text(encoding="utf-8"))
        for name in ("whole", "killed", "other")
    }
    assert results["whole"]["cost"] > 0
    # Every call the killed run paid for is counted once: its cost is the whole run's.
    assert results["killed"]["cost"] == pytest.approx(results["whole"]["cost"], rel=1e-6)
    assert results["killed"]["tokens"] == results["whole"]["tokens"]
    assert results["other"]["cost"] == 0
