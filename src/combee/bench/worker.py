"""One benchmark configuration, trained in a fresh process and measured from the inside."""

from __future__ import annotations

import asyncio
import gc
import resource
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from combee.api import train_async
from combee.bench.metrics import idle_fraction
from combee.bench.plan import BenchConfig, BenchPlan, BenchSettings
from combee.core.batch_schedule import BatchSchedule
from combee.core.controller import AutoBatchSize
from combee.core.loop_observer import LoopObserver
from combee.core.loop_reports import IterationReport
from combee.core.types import Reflection, Trajectory
from combee.llm.connect import connect
from combee.methods.ace import AceMethod, Playbook
from combee.methods.ace.dedup import default_near_duplicates
from combee.methods.ace.settings import AceSettings
from combee.methods.ace.update import AceUpdate
from combee.strategies.settings import CombeeSettings
from combee.tasks.base import Sample
from combee.tasks.formula import FormulaTask


@dataclass(frozen=True)
class RunSpec(BenchSettings):
    """One configuration to measure, with its plan's settings. ``batch_size`` None means
    ``auto``."""

    name: str
    strategy: str
    batch_size: int | None
    client: str
    base_url: str
    duplication: int = CombeeSettings.duplication
    fan_in: int = CombeeSettings.fan_in
    token_budget: int | None = AceSettings.token_budget
    max_tokens: int = 16384
    """Room for the scripted curator's and merger's long replies: a truncated reply is a failure."""

    @classmethod
    def of(cls, plan: BenchPlan, config: BenchConfig, base_url: str) -> RunSpec:
        """The run of ``config`` in ``plan`` against the server at ``base_url``: the plan's
        settings, with the configuration's own cap on auto where it has one."""
        settings = plan.bench_settings()
        settings["max_batch_size"] = config.max_batch_size or plan.max_batch_size
        return cls(
            name=config.name,
            strategy=config.strategy,
            batch_size=config.batch_size,
            client=config.client,
            base_url=base_url,
            **settings,
        )


class _CountingMethod:
    """Forwards to ACE and counts which reflections reach the reduce and a successful curate."""

    def __init__(self, inner: AceMethod) -> None:
        self.inner = inner
        self.valid_reflections = 0
        self.reached_curate: set[str] = set()

    async def rollout(self, context: Playbook, sample: Sample) -> Trajectory:
        return await self.inner.rollout(context, sample)

    async def reflect(self, context: Playbook, trajectory: Trajectory) -> Reflection:
        reflection = await self.inner.reflect(context, trajectory)
        self.valid_reflections += 1
        return reflection

    async def curate(self, context: Playbook, reflections: Sequence[Reflection]) -> AceUpdate:
        update = await self.inner.curate(context, reflections)
        self.reached_curate.update(r.sample_id for r in reflections)
        return update

    async def merge(self, context: Playbook, updates: Sequence[AceUpdate]) -> AceUpdate:
        return await self.inner.merge(context, updates)

    def tally(self, context: Playbook, reflections: Sequence[Reflection]) -> Playbook:
        return self.inner.tally(context, reflections)

    def apply(self, context: Playbook, update: AceUpdate) -> Playbook:
        return self.inner.apply(context, update)


class _Iterations(LoopObserver):
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        self.rows.append(
            {
                "epoch": report.epoch,
                "batch_size": report.batch_size,
                "wall_s": round(report.wall_s, 4),
                "reflections": len(report.reflections),
                "failed_samples": len(report.failures),
            }
        )


def run_in_process(spec: RunSpec) -> dict[str, Any]:
    """Entry point in the child process."""
    return asyncio.run(_run(spec))


async def _run(spec: RunSpec) -> dict[str, Any]:
    task = FormulaTask()
    llm = connect(
        "sim",
        base_url=spec.base_url,
        api_key_env="COMBEE_BENCH_KEY",
        client=spec.client,
        concurrency=spec.concurrency,
        timeout_s=spec.timeout_s,
        max_retries=spec.max_retries,
        cache=None,  # a cache would fake speed
        seed=spec.seed,
        redact=spec.redact,
    )
    try:
        await llm.preflight()
        near = default_near_duplicates(spec.dedup)
        method = _CountingMethod(
            AceMethod(
                llm, task.score, max_tokens=spec.max_tokens, near_duplicates=near,
                ace=AceSettings(token_budget=spec.token_budget, screen=spec.screen),
            )
        )  # fmt: skip
        auto: AutoBatchSize | None = None
        schedule: BatchSchedule | int
        if spec.batch_size is None:
            auto = AutoBatchSize(tau=spec.tau, max_batch_size=spec.max_batch_size)
            schedule = auto
        else:
            schedule = spec.batch_size
        iterations = _Iterations()
        gc.collect()
        cpu_before = time.process_time()
        started_wall = time.time()
        started = time.perf_counter()
        result = await train_async(
            task,
            method=method,
            strategy=spec.strategy,
            batch_size=schedule,
            llm=llm,
            epochs=spec.epochs,
            observers=[iterations],
            progress=False,
            seed=spec.seed,
            train_limit=spec.train_limit,
            val_limit=0,
            test_limit=0,
            duplication=spec.duplication,
            fan_in=spec.fan_in,
            initial_context=Playbook(),
            preflight=False,
        )
        ended = time.perf_counter()
        ended_wall = time.time()
        cpu = time.process_time() - cpu_before
    finally:
        await llm.aclose()
    calls = [c for c in llm.calls if c.role != "preflight" and c.start >= started]
    usage = {role: u for role, u in llm.usage().items() if role != "preflight"}
    call_count = sum(u.calls for u in usage.values())
    retries: dict[str, int] = {}
    for u in usage.values():
        for kind, count in u.retries_by_kind.items():
            retries[kind] = retries.get(kind, 0) + count
    epoch_times = [
        round(sum(r["wall_s"] for r in iterations.rows if r["epoch"] == e), 4)
        for e in range(1, spec.epochs + 1)
    ]
    return {
        "spec": asdict(spec),
        "train_seconds": round(ended - started, 4),
        "train_span_wall": [started_wall, ended_wall],
        "epoch_seconds": epoch_times,
        "iterations": result.summary["iterations"],
        "batch_sizes": [r["batch_size"] for r in iterations.rows],
        "iteration_rows": iterations.rows,
        "llm_calls": call_count,
        "roles": {
            role: {
                "calls": u.calls,
                "failed": u.failed_calls,
                "retries": u.retries,
                "reasks": u.reasks,
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
            }
            for role, u in sorted(usage.items())
        },
        "retries_by_kind": dict(sorted(retries.items())),
        "client_cpu_s": round(cpu, 4),
        "cpu_ms_per_call": round(1000 * cpu / call_count, 4) if call_count else None,
        "idle_fraction": round(idle_fraction([(c.sent, c.end) for c in calls], started, ended), 4),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "failed_samples": len(result.failures),
        "failed_by_stage": _count(f.stage for f in result.failures),
        "valid_reflections": method.valid_reflections,
        "reflections_in_a_curate": len(method.reached_curate),
        "playbook_bullets": len(result.final_context),
        "dedup": near is not None,
        "near_duplicates": method.inner.lessons.near_duplicates,
        "batch_profile": None if auto is None else auto.profile(),
    }


def _count(items: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return counts


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024
