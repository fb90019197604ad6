"""``combee train --method gepa``: optimise a system prompt with the ``gepa`` library.

The run directory has the same layout as an ACE run: ``config.json``, ``metrics.jsonl`` (one
line per gepa iteration), ``contexts/iter_NNNN.txt`` (each accepted candidate), ``prompt.txt``
(the best candidate), ``gepa_result.json`` (gepa's result: candidates, parents, validation
scores) and ``final_results.json`` (test accuracy of the best prompt, calls, tokens, cost).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import threading
import time
from pathlib import Path
from typing import Any, cast

from gepa.api import optimize
from gepa.core.adapter import GEPAAdapter
from gepa.core.callbacks import GEPACallback
from gepa.core.result import GEPAResult
from gepa.core.state import GEPAState
from rich.console import Console

from combee.cli.endpoint import EndpointSettings, make_llm
from combee.cli.train import TrainOptions, _log_to, load_samples
from combee.errors import ConfigError
from combee.llm.types import RoleUsage
from combee.methods.ace.playbook import count_tokens
from combee.methods.gepa import (
    COMPONENT,
    DEFAULT_SEED_PROMPT,
    Attempt,
    CombeeReflection,
    IterationTimer,
    LoopRunner,
    ResizableBatchSampler,
    TaskAdapter,
    plan_for,
)
from combee.runs import RunDir
from combee.runs.recorder import usage_delta, usage_totals
from combee.tasks.base import Sample, accuracy
from combee.tasks.registry import get_task

log = logging.getLogger("combee.gepa")

GEPA_STATE_DIR = "gepa_state"
"""gepa's own checkpoint inside the run directory; a re-run with the same --out resumes it."""


class _GepaLog:
    """gepa's logger protocol, into Combee's log (the run directory's run.log)."""

    def log(self, message: str) -> None:
        log.info("%s", message)


class _StopFlag:
    """A gepa stopper that a cancelled command sets, so the engine thread ends soon."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def __call__(self, gepa_state: GEPAState[Any, Any]) -> bool:
        return self.event.is_set()


class _MetricsRecorder:
    """A gepa callback: one ``metrics.jsonl`` line per iteration, each accepted candidate saved."""

    def __init__(self, run_dir: RunDir, timer: IterationTimer, usage: Any, console: Console):
        self.run_dir = run_dir
        self.timer = timer
        self.usage = usage
        self.console = console
        self._last_usage: dict[str, RoleUsage] = dict(usage())
        self._started = time.perf_counter()

    def on_iteration_end(self, event: Any) -> None:
        state = event["state"]
        timing = self.timer.timings[-1] if self.timer.timings else None
        scores = list(state.program_full_scores_val_set)
        now = dict(self.usage())
        row = {
            "iteration": int(event["iteration"]),
            "batch_size": timing.batch_size if timing else None,
            "seconds": round(timing.seconds, 3) if timing else None,
            "wall_seconds": round(time.perf_counter() - self._started, 3),
            "accepted": bool(event["proposal_accepted"]),
            "candidates": len(state.program_candidates),
            "best_val_score": max(scores) if scores else None,
            "metric_calls": int(state.total_num_evals),
            "usage": usage_delta(now, self._last_usage),
        }
        self._last_usage = now
        self.run_dir.append_jsonl("metrics.jsonl", row)
        if event["proposal_accepted"]:
            prompt = state.program_candidates[-1][COMPONENT]
            self.run_dir.write_context(int(event["iteration"]), prompt)
        self.console.print(
            f"iteration {row['iteration']}: batch={row['batch_size']} "
            f"{'accepted' if row['accepted'] else 'no change'} candidates={row['candidates']} "
            f"best_val={row['best_val_score']} metric_calls={row['metric_calls']}",
            highlight=False,
        )


def _seed_prompt(path: Path | None) -> str:
    if path is None:
        return DEFAULT_SEED_PROMPT
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ConfigError(f"cannot read the initial prompt {path}: {error.strerror}") from error
    if not text:
        raise ConfigError(f"the initial prompt file {path} is empty")
    return text


async def run_train_gepa(
    options: TrainOptions, endpoint: EndpointSettings, console: Console, *, max_metric_calls: int
) -> dict[str, Any]:
    """Optimise a system prompt with gepa and write the run directory; returns final_results.

    ``options.initial_playbook``, when given, is the file holding the seed system prompt.
    ``max_metric_calls`` is gepa's budget of generator rollouts (training and validation).
    """
    plan = plan_for(options.strategy, options.batch_size)
    if max_metric_calls < 1:
        raise ConfigError(f"--max-metric-calls must be at least 1 (got {max_metric_calls})")
    task = get_task(options.task, data=options.data, scorer=options.scorer, seed=options.seed)
    train_set, val_set, test_set = load_samples(task, options)
    seed_prompt = _seed_prompt(options.initial_playbook)
    run_dir = RunDir(options.out, overwrite=options.overwrite)
    if options.overwrite:
        shutil.rmtree(run_dir.path / GEPA_STATE_DIR, ignore_errors=True)
    handler = _log_to(run_dir)
    llm = make_llm(endpoint)
    try:
        await llm.preflight()
        runner = LoopRunner(asyncio.get_running_loop())
        adapter = TaskAdapter(
            llm, runner, task.score, temperature=options.temperature, max_tokens=options.max_tokens
        )
        reflection = CombeeReflection(
            llm,
            runner,
            grouping=plan.grouping,
            p=options.duplication,
            seed=options.seed,
            temperature=options.temperature,
        )
        sampler = ResizableBatchSampler(plan.minibatch_size, seed=options.seed)
        timer = IterationTimer(sampler)
        recorder = _MetricsRecorder(run_dir, timer, llm.usage, console)
        config = {
            "method": "gepa",
            **{k: str(v) if isinstance(v, Path) else v for k, v in vars(options).items()},
            "max_metric_calls": max_metric_calls,
            "endpoint": endpoint.describe(),
            "samples": {"train": len(train_set), "val": len(val_set), "test": len(test_set)},
            "effective_batch_size": plan.minibatch_size,
            "reflection_grouping": plan.grouping,
            "validation": "val" if val_set else "train (no validation samples)",
        }
        run_dir.write_json("config.json", config)
        console.print(
            f"[bold]combee train --method gepa[/] task={options.task} strategy={plan.strategy} "
            f"batch={plan.minibatch_size} train={len(train_set)} val={len(val_set)} "
            f"test={len(test_set)} budget={max_metric_calls} model={endpoint.model} "
            f"-> {run_dir.path}"
        )
        results: dict[str, Any] = {}
        if options.baseline and test_set:
            baseline = await adapter.attempts(test_set, seed_prompt)
            results["baseline_test_accuracy"] = accuracy([a.score for a in baseline])
        stop = _StopFlag()
        started = time.perf_counter()

        def run_gepa() -> GEPAResult[str, int]:
            return optimize(
                seed_candidate={COMPONENT: seed_prompt},
                trainset=train_set,
                valset=val_set or None,
                adapter=cast("GEPAAdapter[Sample, Attempt, str]", adapter),
                reflection_strategy=reflection,
                batch_sampler=sampler,
                reflection_minibatch_size=None,
                max_metric_calls=max_metric_calls,
                stop_callbacks=[stop],
                callbacks=cast("list[GEPACallback]", [timer, recorder]),
                logger=_GepaLog(),
                run_dir=str(run_dir.path / GEPA_STATE_DIR),
                seed=options.seed,
            )

        try:
            result = await asyncio.to_thread(run_gepa)
        except BaseException:
            stop.event.set()
            raise
        train_seconds = time.perf_counter() - started
        best_prompt = str(result.candidates[result.best_idx][COMPONENT])
        run_dir.write_text("prompt.txt", best_prompt + "\n")
        run_dir.write_text(
            "gepa_result.json", json.dumps(result.to_dict(), indent=2, default=str) + "\n"
        )
        test_started = time.perf_counter()
        attempts = await adapter.attempts(test_set, best_prompt)
        usage = llm.usage()
        results.update(
            {
                "test_accuracy": accuracy([a.score for a in attempts]) if test_set else None,
                "test_samples": len(test_set),
                "test_failed_samples": sum(1 for a in attempts if a.error is not None),
                "test_seconds": round(time.perf_counter() - test_started, 3),
                "best_val_accuracy": result.val_aggregate_scores[result.best_idx],
                "seed_val_accuracy": result.val_aggregate_scores[0],
                "train_seconds": round(train_seconds, 3),
                "iterations": len(timer.timings),
                "candidates": result.num_candidates,
                "best_candidate": result.best_idx,
                "metric_calls": result.total_metric_calls,
                "prompt_tokens": count_tokens(best_prompt),
                "llm_calls": {role: u.calls for role, u in usage.items()},
                "tokens": {
                    role: {"prompt": u.prompt_tokens, "completion": u.completion_tokens}
                    for role, u in usage.items()
                },
                "cost": round(sum(u.cost for u in usage.values()), 6),
                "usage": usage_totals(usage),
                "reflection": {
                    "proposal_calls": reflection.usage.proposal_calls,
                    "merge_calls": reflection.usage.merge_calls,
                    "failed_calls": reflection.usage.failed_calls,
                    "memo_hits": reflection.usage.memo_hits,
                },
            }
        )
        run_dir.write_json("final_results.json", results)
        return results
    finally:
        await llm.aclose()
        logging.getLogger("combee").removeHandler(handler)
        handler.close()
