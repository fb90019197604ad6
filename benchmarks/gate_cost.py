"""What the outcome gate costs, and what it does to accuracy, with nothing planted.

AgentDojo banking with the scripted agent over real HTTP (its episodes follow each task's
reference calls, so a lesson cannot change them: the figures show the gate's cost alone), the
same run with the gate on and off; then, given the run folders of two ``combee train`` runs
that differ only in ``--gate``/``--no-gate`` (the embedded model on Formula, say), the same
figures read from them.

    python benchmarks/gate_cost.py [--train 12] [--test 4] [--batch 8]
        [--runs GATED_RUN OPEN_RUN]

Prints, per run: the LLM calls by role, the gate's rollouts (and their share of the learning
calls), the held-out samples it kept out of learning, the operations it left out, training
time, and the test accuracy.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import combee
from combee.llm import connect
from combee.sim import serve_in_thread
from combee.sim.agentdojo_script import agentdojo_responder
from combee.sync import run_sync
from combee.tasks.agentdojo import agentdojo_task


def figures(run_dir: Path, wall_s: float | None = None) -> dict[str, Any]:
    """A run's cost and accuracy, read from its folder."""
    results = json.loads((run_dir / "final_results.json").read_text(encoding="utf-8"))
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    checks = [row["gate"] for row in rows if "gate" in row]
    gate_rollouts = sum(check["rollouts"] for check in checks)
    learning = sum(row["reflections"] for row in rows) * 2
    return {
        "llm_calls": results.get("llm_calls", {}),
        "gate_rollouts": gate_rollouts,
        "gate_share_of_learning_calls": round(gate_rollouts / learning, 3) if learning else None,
        "held_out": sum(row.get("held_out", 0) for row in rows),
        "gated": sum(check["gated"] for check in checks),
        "updates_lowering_the_score": sum(1 for c in checks if c["proposed"] < c["before"]),
        "train_seconds": round(results.get("train_seconds", 0.0), 1),
        "wall_seconds": None if wall_s is None else round(wall_s, 1),
        "test_accuracy": results.get("test_accuracy", results.get("test_success_rate")),
        "baseline_test_accuracy": results.get("baseline_test_accuracy"),
    }


def agentdojo(train: int, test: int, batch: int, gate: bool, folder: Path) -> dict[str, Any]:
    task = agentdojo_task("banking", seed=0, train=train, test=test)
    with serve_in_thread(agentdojo_responder("banking")) as server:
        llm = connect("sim", base_url=server.base_url)
        started = time.perf_counter()
        try:
            combee.train(task, strategy="combee", batch_size=batch, llm=llm, run_dir=folder,
                         gate=gate, seed=0)  # fmt: skip
        finally:
            run_sync(llm.aclose(), async_name="aclose")
        wall = time.perf_counter() - started
    return figures(folder, wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--train", type=int, default=12)
    parser.add_argument("--test", type=int, default=4)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--runs", nargs=2, type=Path, metavar=("GATED_RUN", "OPEN_RUN"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for gate in (True, False):
            found = agentdojo(args.train, args.test, args.batch, gate, Path(scratch) / str(gate))
            print(f"agentdojo banking, scripted agent, gate {'on' if gate else 'off'}: "
                  f"{json.dumps(found)}")  # fmt: skip
    if args.runs:
        for label, run_dir in zip(("on", "off"), args.runs, strict=True):
            print(f"{run_dir.name}, gate {label}: {json.dumps(figures(run_dir))}")


if __name__ == "__main__":
    main()
