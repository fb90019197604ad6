"""Records a training run into its run directory as it goes."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from combee.core.controller import BatchDecision
from combee.core.evaluate import Evaluation
from combee.core.loop_observer import LoopObserver
from combee.core.loop_reports import IterationReport
from combee.core.loop_state import LoopState
from combee.errors import InvalidStepError
from combee.llm.types import RoleUsage
from combee.runs.checkpoint import write_checkpoint
from combee.runs.layout import FAILURES_FILE, METRICS_FILE, PROFILE_FILE
from combee.runs.run_dir import RunDir


def usage_delta(now: Mapping[str, RoleUsage], before: Mapping[str, RoleUsage]) -> dict[str, Any]:
    """Per role: calls, failed calls, tokens and cost spent between two usage snapshots."""
    delta: dict[str, Any] = {}
    for role, usage in now.items():
        old = before.get(role, RoleUsage())
        row = {
            "calls": usage.calls - old.calls,
            "failed_calls": usage.failed_calls - old.failed_calls,
            "prompt_tokens": usage.prompt_tokens - old.prompt_tokens,
            "completion_tokens": usage.completion_tokens - old.completion_tokens,
            "cost": round(usage.cost - old.cost, 6),
            "replayed_s": round(usage.replayed_s - old.replayed_s, 3),
        }
        if any(row.values()):
            delta[role] = row
    return delta


def usage_totals(usage: Mapping[str, RoleUsage]) -> dict[str, Any]:
    return {role: dataclasses.asdict(u) for role, u in usage.items()}


class RunRecorder(LoopObserver):
    """Writes one ``metrics.jsonl`` line and one context version per iteration."""

    def __init__(
        self,
        run_dir: RunDir,
        *,
        usage: Callable[[], Mapping[str, RoleUsage]],
        render: Callable[[Any], str],
        stats: Callable[[Any], Mapping[str, Any]],
        inner: LoopObserver | None = None,
        dump: Callable[[Any], Any] | None = None,
        run_id: str | None = None,
    ) -> None:
        self.run_dir = run_dir
        self.run_id = run_id
        """Kept in each checkpoint, so that a resume goes on as the same run."""
        self._dump = dump
        self._usage = usage
        self._render = render
        self._stats = stats
        self._inner = inner or LoopObserver()
        self._last_usage = dict(usage())
        self.latest_context: Any = None

    def on_iteration_start(self, epoch: int, iteration: int, batch_size: int) -> None:
        self._inner.on_iteration_start(epoch, iteration, batch_size)

    def on_sample_done(self) -> None:
        self._inner.on_sample_done()

    def on_phase(self, phase: str) -> None:
        self._inner.on_phase(phase)

    def on_evaluation_start(self, label: str, samples: int) -> None:
        self._inner.on_evaluation_start(label, samples)

    def on_evaluation_end(self, label: str, evaluation: Evaluation, seconds: float) -> None:
        self._inner.on_evaluation_end(label, evaluation, seconds)

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        now = dict(self._usage())
        invalid = sum(1 for f in report.failures if f.kind == InvalidStepError.kind)
        row: dict[str, Any] = {
            "epoch": report.epoch,
            "iteration": report.iteration,
            "batch_size": report.batch_size,
            "wall_s": round(report.wall_s, 4),
            "reflections": len(report.reflections),
            "failed_samples": len(report.failures),
            **({"invalid_steps": invalid} if invalid else {}),
            "train_correct": sum(1 for t in report.trajectories if t.score.correct),
            "reduce_levels": [len(level) for level in report.trace.levels],
            **({"groups": report.trace.groups} if report.trace.groups else {}),
            "roles": usage_delta(now, self._last_usage),
            **self._stats(report.context),
            "val_accuracy": report.val_accuracy,
            **report.extra,
        }
        self._last_usage = now
        self.latest_context = report.context
        # The context version first: an iteration in metrics.jsonl has its version on disk.
        self.run_dir.write_context(report.iteration, self._render(report.context))
        self.run_dir.append_jsonl(METRICS_FILE, row)
        for failure in report.failures:
            row = {"iteration": report.iteration, **dataclasses.asdict(failure)}
            self.run_dir.append_jsonl(FAILURES_FILE, row)
        self._inner.on_iteration_end(report)

    def on_checkpoint(self, state: LoopState[Any]) -> None:
        if self._dump is not None:
            write_checkpoint(self.run_dir, state, self._dump, self._usage(), self.run_id)
        self._inner.on_checkpoint(state)


class ProfileRecorder(LoopObserver):
    """Writes ``batch_profile.json`` (the controller's measurements, fit and choice) as soon as
    each batch size decision is made."""

    def __init__(self, run_dir: RunDir, profile: Callable[[], Mapping[str, Any]]) -> None:
        self.run_dir = run_dir
        self._profile = profile

    def on_batch_decision(self, decision: BatchDecision) -> None:
        self.run_dir.write_json(PROFILE_FILE, self._profile())
