"""One whole Combee iteration at batch 10,000: the map (10,000 rollouts and 10,000 reflections)
and the reduction, against the simulated server in its own process.

Each sample asks about its own made-up formula, so each reflection carries a distinct lesson and
the scripted curator writes one ADD per lesson: every reflection must be accounted for in the
playbook (no token budget). Prints wall times of the map and the reduction, the levels, the calls
per role, the idle share (no call in flight), the process's CPU per call and its peak memory.

    python benchmarks/iteration_10k.py [--samples 10000] [--ttft 0.4] [--capacity 2048]
        [--client openai|lean]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

import combee
from combee import Sample, SampleTask
from combee.bench.metrics import idle_fraction
from combee.bench.server_process import SimServerProcess
from combee.core.loop import IterationReport, LoopObserver
from combee.sim import SimConfig


class PhaseTimer(LoopObserver):
    """When each phase of the iteration began, and the iteration's report."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self.reports: list[IterationReport[Any, Any]] = []

    def on_phase(self, phase: str) -> None:
        self.phases[phase] = time.perf_counter()

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        self.phases["end"] = time.perf_counter()
        self.reports.append(report)


def make_task(samples: int) -> SampleTask:
    rows = [
        Sample(
            id=f"s{i}",
            question=f"Use formula Topic {i} to answer: the value in case {i}?",
            answer="0",
        )
        for i in range(samples)
    ]
    return SampleTask("synthetic", train=rows, scorer=lambda prediction, sample: False)


async def run(args: argparse.Namespace, base_url: str, run_dir: Path) -> dict[str, Any]:
    llm = combee.llm.connect(
        "sim", base_url=base_url, client=args.client, cache=None, concurrency=args.concurrency
    )
    timer = PhaseTimer()
    try:
        cpu_before = time.process_time()
        started = time.perf_counter()
        result = await combee.train_async(
            make_task(args.samples), strategy="combee", batch_size=args.samples, llm=llm,
            run_dir=run_dir, observers=[timer], token_budget=None, max_tokens=16384,
            dedup=False, val_limit=0, test_limit=0, preflight=False,
        )  # fmt: skip
        ended = time.perf_counter()
        cpu = time.process_time() - cpu_before
        calls = [(c.sent, c.end) for c in llm.calls]
    finally:
        await llm.aclose()
    metrics = json.loads((run_dir / "metrics.jsonl").read_text().splitlines()[0])
    roles = {role: figures["calls"] for role, figures in metrics["roles"].items()}
    return {
        "samples": args.samples,
        "wall_s": round(ended - started, 2),
        "iteration_s": metrics["wall_s"],
        "map_s": round(timer.phases["reduce"] - timer.phases["generate + reflect"], 2),
        "reduce_s": round(timer.phases["end"] - timer.phases["reduce"], 2),
        "reduce_levels": metrics["reduce_levels"],
        "calls": roles,
        "failed_calls": {r: f["failed_calls"] for r, f in metrics["roles"].items()},
        "idle_share": round(idle_fraction(calls, started, ended), 4),
        "cpu_ms_per_call": round(1000 * cpu / max(1, len(calls)), 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "reflections": len(timer.reports[0].reflections) if timer.reports else 0,
        "failed_samples": len(result.failures),
        "bullets": metrics["playbook_bullets"],
        "ops_applied": metrics["ops_applied"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--ttft", type=float, default=0.4)
    parser.add_argument("--capacity", type=int, default=2048)
    parser.add_argument("--client", default="openai", choices=["openai", "lean"])
    parser.add_argument("--concurrency", type=int, default=None)
    args = parser.parse_args()
    config = SimConfig(ttft_s=args.ttft, decode_tokens_per_s=100_000, capacity=args.capacity)
    server = SimServerProcess(config)
    server.start()
    try:
        with tempfile.TemporaryDirectory() as scratch:
            figures = asyncio.run(run(args, server.base_url, Path(scratch) / "run"))
    finally:
        server.stop()
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
