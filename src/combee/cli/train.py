"""``combee train`` and ``combee eval``: wire a task, a method, a strategy and an endpoint."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from combee.cli.endpoint import EndpointSettings, make_llm
from combee.cli.progress import CountingDisplay, ProgressDisplay
from combee.core.controller import (
    DEFAULT_MAX_BATCH_SIZE,
    DEFAULT_TAU,
    AutoBatchSize,
    BatchDecision,
)
from combee.core.evaluate import Evaluation, evaluate
from combee.core.loop import BatchSchedule, FixedBatchSize, LoopConfig, train
from combee.errors import ConfigError
from combee.llm.client import LLM
from combee.methods.ace import AceMethod, Playbook
from combee.runs import RunDir, RunRecorder
from combee.runs.recorder import usage_totals
from combee.strategies import get_strategy
from combee.tasks.base import Sample, Task
from combee.tasks.registry import get_task


@dataclass(frozen=True)
class TrainOptions:
    task: str
    data: str | None
    scorer: str
    strategy: str
    batch_size: int
    epochs: int
    duplication: int
    fan_in: int
    train_limit: int | None
    val_limit: int | None
    test_limit: int | None
    val_every: int
    token_budget: int | None
    temperature: float
    max_tokens: int
    initial_playbook: Path | None
    baseline: bool
    seed: int
    out: Path
    overwrite: bool
    auto_batch: bool = False
    """``--batch-size auto``: the batch size controller chooses (``batch_size`` is then unused)."""
    max_batch_size: int = DEFAULT_MAX_BATCH_SIZE
    tau: float = DEFAULT_TAU
    reprofile: bool = False


def _limit(samples: Sequence[Sample], limit: int | None, flag: str) -> list[Sample]:
    if limit is not None and limit < 0:
        raise ConfigError(f"{flag} must be 0 or more (got {limit})")
    return list(samples if limit is None else samples[:limit])


def load_samples(
    task: Task, options: TrainOptions
) -> tuple[list[Sample], list[Sample], list[Sample]]:
    """The task's train, validation and test samples within the run's limits."""
    splits = task.load()
    train_set = _limit(splits.train, options.train_limit, "--train-limit")
    val_set = _limit(splits.val, options.val_limit, "--val-limit")
    test_set = _limit(splits.test, options.test_limit, "--test-limit")
    if not train_set:
        raise ConfigError(f"task {options.task!r} has no training samples with these limits")
    return train_set, val_set, test_set


def _load_playbook(path: Path | None) -> Playbook:
    if path is None:
        return Playbook()
    try:
        return Playbook.parse(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"cannot read playbook {path}: {error.strerror}") from error
    except ValueError as error:
        raise ConfigError(f"{path}: not a valid playbook: {error}") from error


def _playbook_stats(method: AceMethod, playbook: Playbook) -> dict[str, Any]:
    stats: dict[str, Any] = {
        "playbook_bullets": len(playbook),
        "playbook_tokens": playbook.token_count(),
    }
    if method.last_apply is not None:
        stats["ops_applied"] = len(method.last_apply.applied)
        stats["ops_rejected"] = len(method.last_apply.rejected)
        stats["bullets_evicted"] = len(method.last_apply.evicted)
    return stats


def _log_to(run_dir: RunDir) -> logging.Handler:
    handler = logging.FileHandler(run_dir.path / "run.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("combee")
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    return handler


async def _evaluate_with_bar(
    console: Console,
    label: str,
    method: AceMethod,
    playbook: Playbook,
    samples: list[Sample],
    task: Task,
) -> Evaluation:
    started = time.perf_counter()
    with CountingDisplay(console, label, len(samples)) as bar:
        result = await evaluate(method, playbook, samples, score=task.score, on_done=bar.advance)
    failed = f", {len(result.failures)} failed" if result.failures else ""
    console.print(
        f"{label}: accuracy {result.accuracy():.3f} on {len(samples)} samples{failed} "
        f"({time.perf_counter() - started:.1f}s)",
        highlight=False,
    )
    return result


def _schedule(
    options: TrainOptions, fixed_size: int, run_dir: RunDir, console: Console
) -> BatchSchedule:
    """A fixed batch size, or the controller, which saves and prints each decision."""
    if not options.auto_batch:
        return FixedBatchSize(fixed_size)

    def decided(decision: BatchDecision) -> None:
        run_dir.write_json(PROFILE_FILE, controller.profile())
        measured = ", ".join(
            f"b={m.batch_size}: {m.t_iter_s:.2f}s/iter, epoch~{m.epoch_time_s:.1f}s"
            for m in decision.measurements
        )
        console.print(
            f"[bold]batch size[/] epoch {decision.epoch}: {measured} -> chose "
            f"[bold]{decision.chosen}[/] ({decision.why})",
            highlight=False,
        )

    controller = AutoBatchSize(
        tau=options.tau,
        max_batch_size=options.max_batch_size,
        reprofile=options.reprofile,
        on_decision=decided,
    )
    return controller


PROFILE_FILE = "batch_profile.json"


async def run_train(
    options: TrainOptions, endpoint: EndpointSettings, console: Console
) -> dict[str, Any]:
    """Train a playbook and write the run directory; returns final_results."""
    task = get_task(options.task, data=options.data, scorer=options.scorer, seed=options.seed)
    strategy = get_strategy(
        options.strategy, p=options.duplication, fan_in=options.fan_in, seed=options.seed
    )
    if options.batch_size < 1:
        raise ConfigError(f"--batch-size must be at least 1 (got {options.batch_size})")
    if options.auto_batch and strategy.name == "sequential":
        raise ConfigError("--batch-size auto needs --strategy naive or combee (sequential is 1)")
    if options.epochs < 1:
        raise ConfigError(f"--epochs must be at least 1 (got {options.epochs})")
    train_set, val_set, test_set = load_samples(task, options)
    playbook = _load_playbook(options.initial_playbook)
    run_dir = RunDir(options.out, overwrite=options.overwrite)
    handler = _log_to(run_dir)
    llm = make_llm(endpoint)
    try:
        await llm.preflight()
        method = AceMethod(
            llm,
            task.score,
            token_budget=options.token_budget,
            temperature=options.temperature,
            max_tokens=options.max_tokens,
        )
        schedule = _schedule(options, strategy.batch_size(options.batch_size), run_dir, console)
        batch_label: int | str = (
            "auto" if options.auto_batch else strategy.batch_size(options.batch_size)
        )
        config = {
            "method": "ace",
            **{k: str(v) if isinstance(v, Path) else v for k, v in vars(options).items()},
            "endpoint": endpoint.describe(),
            "samples": {"train": len(train_set), "val": len(val_set), "test": len(test_set)},
            "effective_batch_size": batch_label,
        }
        run_dir.write_json("config.json", config)
        console.print(
            f"[bold]combee train[/] task={options.task} strategy={strategy.name} "
            f"batch={batch_label} train={len(train_set)} "
            f"val={len(val_set)} test={len(test_set)} model={endpoint.model} -> {run_dir.path}"
        )
        results: dict[str, Any] = {}
        if options.baseline and test_set:
            baseline = await _evaluate_with_bar(
                console, "baseline test", method, playbook, test_set, task
            )
            results["baseline_test_accuracy"] = baseline.accuracy()
        display = ProgressDisplay(console, total_samples=len(train_set), epochs=options.epochs)
        recorder = RunRecorder(
            run_dir,
            usage=llm.usage,
            render=lambda pb: pb.render(),
            stats=lambda pb: _playbook_stats(method, pb),
            inner=display,
        )
        try:
            with display:
                outcome = await train(
                    method,
                    strategy,
                    playbook,
                    train_set,
                    val_set,
                    schedule=schedule,
                    score=task.score,
                    config=LoopConfig(
                        epochs=options.epochs, seed=options.seed, val_every=options.val_every
                    ),
                    observer=recorder,
                )
        except BaseException:
            if recorder.latest_context is not None:
                run_dir.write_text("playbook.txt", recorder.latest_context.render())
            raise
        run_dir.write_text("playbook.txt", outcome.best_context.render())
        run_dir.write_text("playbook_last.txt", outcome.final_context.render())
        test_started = time.perf_counter()
        test = await _evaluate_with_bar(
            console, "test", method, outcome.best_context, test_set, task
        )
        usage = llm.usage()
        results.update(
            {
                "test_accuracy": test.accuracy() if test_set else None,
                "test_samples": len(test_set),
                "test_failed_samples": len(test.failures),
                "test_seconds": round(time.perf_counter() - test_started, 3),
                "best_val_accuracy": outcome.best_val_accuracy,
                "train_seconds": round(outcome.train_seconds, 3),
                "iterations": outcome.iterations,
                "train_failed_samples": len(outcome.failures),
                "playbook_bullets": len(outcome.best_context),
                "playbook_tokens": outcome.best_context.token_count(),
                "llm_calls": {role: u.calls for role, u in usage.items()},
                "tokens": {
                    role: {"prompt": u.prompt_tokens, "completion": u.completion_tokens}
                    for role, u in usage.items()
                },
                "cost": round(sum(u.cost for u in usage.values()), 6),
                "usage": usage_totals(usage),
            }
        )
        run_dir.write_json("final_results.json", results)
        return results
    finally:
        await llm.aclose()
        logging.getLogger("combee").removeHandler(handler)
        handler.close()


@dataclass(frozen=True)
class EvalOptions:
    playbook: Path | None
    task: str
    data: str | None
    scorer: str
    split: str
    limit: int | None
    seed: int
    out: Path | None
    max_tokens: int = 2048


async def run_eval(
    options: EvalOptions, endpoint: EndpointSettings, console: Console
) -> dict[str, Any]:
    """Evaluate a saved playbook (or the empty one) on a task split."""
    task = get_task(options.task, data=options.data, scorer=options.scorer, seed=options.seed)
    splits = task.load()
    if options.split not in ("train", "val", "test"):
        raise ConfigError(f"--split must be train, val or test (got {options.split!r})")
    samples = _limit(getattr(splits, options.split), options.limit, "--limit")
    playbook = _load_playbook(options.playbook)
    llm: LLM = make_llm(endpoint)
    try:
        await llm.preflight()
        method = AceMethod(llm, task.score, max_tokens=options.max_tokens)
        started = time.perf_counter()
        result = await _evaluate_with_bar(
            console, f"{options.split}", method, playbook, samples, task
        )
        report: dict[str, Any] = {
            "task": options.task,
            "split": options.split,
            "playbook": str(options.playbook) if options.playbook else None,
            "samples": len(samples),
            "accuracy": result.accuracy(),
            "failed_samples": len(result.failures),
            "seconds": round(time.perf_counter() - started, 3),
            "llm_calls": {role: u.calls for role, u in llm.usage().items()},
        }
        if options.out is not None:
            options.out.parent.mkdir(parents=True, exist_ok=True)
            rows = [
                {
                    "sample_id": t.sample.id,
                    "prediction": t.prediction,
                    "answer": t.sample.answer,
                    "correct": t.score.correct,
                }
                for t in result.trajectories
            ] + [dataclasses.asdict(f) for f in result.failures]
            options.out.write_text(
                json.dumps({**report, "predictions": rows}, indent=2) + "\n", encoding="utf-8"
            )
        return report
    finally:
        await llm.aclose()
