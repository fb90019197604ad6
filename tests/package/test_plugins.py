"""Open registries: a strategy and a task of the user's, by name on the command line, registered
from Python in this file or installed as a plugin package with entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest
from typer.testing import CliRunner

import combee
from combee.cli.main import app
from combee.core.types import Method, ReduceTrace, Reflection
from combee.sim import RunningServer, serve_in_thread
from combee.sim.ace_script import ace_responder, scripted_answer
from combee.tasks.base import Sample, Score
from tests.cli_helpers import run_combee

C = TypeVar("C")
U = TypeVar("U")


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    with serve_in_thread(ace_responder) as running:
        yield running


class Singles:
    """Curates each reflection alone and merges all local updates in one call."""

    name = "singles"

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = seed
        self.batches: list[int] = []

    def batch_size(self, requested: int) -> int:
        return requested

    async def reduce(
        self, method: Method[C, U], context: C, reflections: Sequence[Reflection]
    ) -> ReduceTrace[U]:
        self.batches.append(len(reflections))
        trace: ReduceTrace[U] = ReduceTrace(levels=[[[i] for i in range(len(reflections))]])
        updates = [await method.curate(context, [r]) for r in reflections]
        if updates:
            trace.levels.append([list(range(len(updates)))])
            trace.update = await method.merge(context, updates)
        return trace


def formula_questions(count: int, start: int = 0) -> list[Sample]:
    questions = [
        f"Use formula Topic{i % 3} to answer: case {i}?" for i in range(start, start + count)
    ]
    return [Sample(f"m{i}", q, scripted_answer(q)) for i, q in enumerate(questions, start)]


def exact(prediction: str, sample: Sample) -> Score:
    ok = prediction.strip() == sample.answer
    return Score(ok, int(ok), 1)


def test_a_strategy_and_a_task_registered_here_run_by_name_on_the_cli(
    server: RunningServer, tmp_path: Path
) -> None:
    made: list[Singles] = []

    def singles(*, seed: int = 0) -> Singles:
        made.append(Singles(seed=seed))
        return made[-1]

    def mine_task(*, seed: int = 0) -> combee.SampleTask:
        return combee.SampleTask(
            "mine", train=formula_questions(6), test=formula_questions(3, 100), scorer=exact
        )

    combee.register_strategy("mine", singles)
    combee.register_task("mine", mine_task)
    out = tmp_path / "run"
    try:
        result = CliRunner().invoke(
            app,
            ["train", "--strategy", "mine", "--task", "mine", "--batch-size", "3",
             "--model", "sim", "--base-url", server.base_url, "--seed", "7", "--out", str(out)],
        )  # fmt: skip
    finally:
        combee.STRATEGIES.unregister("mine")
        combee.TASKS.unregister("mine")
    assert result.exit_code == 0, result.output
    assert len(made) == 1 and made[0].seed == 7 and made[0].batches == [3, 3]
    config = json.loads((out / "config.json").read_text())
    assert (config["strategy"], config["task"]) == ("singles", "mine")
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["reduce_levels"] for m in metrics] == [[3, 1], [3, 1]]
    results = json.loads((out / "final_results.json").read_text())
    assert results["llm_calls"]["curator"] == 6 and results["test_samples"] == 3


PLUGIN = '''
"""A tiny Combee plugin: one strategy, one task."""
from combee.strategies import NaiveStrategy
from combee.tasks import SampleTask
from combee.tasks.base import Sample, Score
from combee.sim.ace_script import scripted_answer


class HalfBatch(NaiveStrategy):
    """Naive aggregation at half the requested batch size."""
    name = "halfbatch"

    def batch_size(self, requested):
        return max(1, requested // 2)


def load(*, seed=0):
    qs = [f"Use formula Plug{i % 2} to answer: case {i}?" for i in range(8)]
    samples = [Sample(f"p{i}", q, scripted_answer(q)) for i, q in enumerate(qs)]
    score = lambda prediction, sample: prediction.strip() == sample.answer
    return SampleTask("plugtask", train=samples[:6], test=samples[6:], scorer=score)
'''

PYPROJECT = """
[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "combee-plugin-demo"
version = "0.1.0"

[project.entry-points."combee.strategies"]
halfbatch = "combee_plugin_demo:HalfBatch"

[project.entry-points."combee.tasks"]
plugtask = "combee_plugin_demo:load"
"""


def test_an_installed_plugin_is_selectable_by_name(server: RunningServer, tmp_path: Path) -> None:
    package = tmp_path / "plugin"
    package.mkdir()
    (package / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT), encoding="utf-8")
    (package / "combee_plugin_demo.py").write_text(textwrap.dedent(PLUGIN), encoding="utf-8")
    site = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(site), str(package)],
        capture_output=True, text=True, check=False, timeout=300,
    )  # fmt: skip
    assert install.returncode == 0, install.stderr
    assert list(site.glob("combee_plugin_demo-*.dist-info/entry_points.txt"))
    out = tmp_path / "run"
    env: dict[str, Any] = {
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    }
    result = run_combee(
        "train", "--strategy", "halfbatch", "--task", "plugtask", "--batch-size", "6",
        "--model", "sim", "--base-url", server.base_url, "--out", str(out), env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    config = json.loads((out / "config.json").read_text())
    assert (config["strategy"], config["task"], config["effective_batch_size"]) == (
        "halfbatch",
        "plugtask",
        3,
    )
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["batch_size"] for m in metrics] == [3, 3]
    unknown = run_combee("train", "--strategy", "halfbatch", "--out", str(tmp_path / "x"))
    assert unknown.returncode == 1 and "unknown strategy" in unknown.stderr
