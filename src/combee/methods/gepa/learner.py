"""GEPA as the run engine drives it: a system prompt optimised by ``gepa.optimize``.

The run's strategy aggregates GEPA's reflection (``sequential``: gepa's own stock reflection
step at minibatch 1, GEPA as published; any other strategy: :class:`CombeeReflection` over the
strategy's reduce), the run's batch schedule sets each iteration's minibatch size (so
``batch_size="auto"`` is the same controller as for ACE), and the run's executor runs the
rollouts. gepa's own state goes to ``RUN_DIR/gepa_state`` (checkpointed after each iteration, so
a rerun continues: :mod:`combee.methods.gepa.checkpoint`) and its result to
``RUN_DIR/gepa_result.json``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from gepa.api import optimize
from gepa.core.adapter import GEPAAdapter
from gepa.core.callbacks import GEPACallback
from gepa.core.result import GEPAResult
from gepa.core.state import GEPAState
from gepa.strategies.candidate_selector import ParetoCandidateSelector

from combee.core.batch_schedule import BatchSchedule
from combee.core.evaluate import Evaluation, evaluate
from combee.core.executor import Executor
from combee.core.loop_observer import LoopObserver
from combee.core.loop_reports import LoopOutcome
from combee.core.loop_settings import LoopSettings
from combee.core.loop_state import LoopState, restore_parts, set_rng_state
from combee.core.types import Strategy
from combee.errors import ConfigError
from combee.llm.client import LLM
from combee.llm.types import DEFAULT_MAX_TOKENS
from combee.methods.ace.playbook import count_tokens
from combee.methods.gepa.adapter import COMPONENT, DEFAULT_SEED_PROMPT, Attempt, TaskAdapter
from combee.methods.gepa.batching import IterationClock
from combee.methods.gepa.checkpoint import GepaCheckpoint, restore_gepa_state
from combee.methods.gepa.reflection import CombeeReflection
from combee.methods.gepa.runner import LoopRunner
from combee.methods.gepa.sampler import ResizableBatchSampler
from combee.methods.gepa.settings import GepaSettings
from combee.methods.gepa.stock import StockReflectionLM
from combee.tasks.base import Sample, Score

log = logging.getLogger("combee.gepa")

GEPA_STATE_DIR = "gepa_state"


class _GepaLog:
    """gepa's logger protocol, into Combee's log (the run directory's run.log)."""

    def log(self, message: str) -> None:
        log.info("%s", message)


class _StopFlag:
    """A gepa stopper that a cancelled run sets, so the engine thread ends soon."""

    def __init__(self) -> None:
        self.event = threading.Event()

    def __call__(self, gepa_state: GEPAState[Any, Any]) -> bool:
        return self.event.is_set()


class GepaLearner:
    """The registered ``gepa`` method (see the module)."""

    name = "gepa"
    context_file = "prompt.txt"
    files = frozenset({context_file, "prompt_last.txt", "gepa_state", "gepa_result.json"})
    """The files a GEPA run writes beside the run's own."""
    resumable = True

    def __init__(
        self,
        llm: LLM,
        score: Callable[[str, Sample], Score],
        *,
        gepa: GepaSettings = GepaSettings(),
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        seed: int = 0,
        run_dir: Path | None = None,
    ) -> None:
        self.llm = llm
        self.score = score
        self.settings = gepa
        """GEPA's settings (:class:`GepaSettings`), checked when the group was made."""
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.run_dir = run_dir
        self._results: dict[str, Any] = {}

    def initial_context(self, text: str | None) -> str:
        if text is None:
            return DEFAULT_SEED_PROMPT
        if not text.strip():
            raise ConfigError("is empty: give the seed system prompt", setting="initial_context")
        return text.strip()

    def render(self, context: str) -> str:
        return context.rstrip("\n") + "\n"

    def stats(self, context: str) -> Mapping[str, Any]:
        return {"prompt_tokens": count_tokens(context)}

    def results(self) -> Mapping[str, Any]:
        return dict(self._results)

    def dump_context(self, context: str) -> str:
        return context

    def load_context(self, data: Any) -> str:
        return str(data)

    def _adapter(
        self, runner: LoopRunner, executor: Executor, validation: Sequence[Sample]
    ) -> TaskAdapter:
        return TaskAdapter(
            self.llm,
            runner,
            self.score,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            executor=executor,
            validation=validation,
        )

    async def evaluate(
        self,
        context: str,
        samples: Sequence[Sample],
        *,
        executor: Executor,
        on_done: Callable[[], None] | None = None,
    ) -> Evaluation:
        adapter = self._adapter(LoopRunner(asyncio.get_running_loop()), executor, ())
        return await evaluate(
            adapter.generator,
            context,
            samples,
            score=self.score,
            on_done=on_done,
            executor=executor,
        )

    async def fit(
        self,
        context: str,
        train_samples: Sequence[Sample],
        val_samples: Sequence[Sample],
        *,
        strategy: Strategy,
        schedule: BatchSchedule,
        executor: Executor,
        observer: LoopObserver,
        config: LoopSettings,
        resume: LoopState[str] | None = None,
    ) -> LoopOutcome[str]:
        if config.pipeline:
            raise ConfigError("is for ACE runs: GEPA runs gepa's own loop", setting="pipeline")
        runner = LoopRunner(asyncio.get_running_loop())
        # Without validation samples gepa validates on the training set; distinct objects let the
        # adapter tell a validation pass from a minibatch by identity.
        valset = list(val_samples) or [dataclasses.replace(s) for s in train_samples]
        adapter = self._adapter(runner, executor, valset)
        # A strategy that never batches is GEPA as published: gepa's own reflection step.
        reflection: CombeeReflection | StockReflectionLM
        if strategy.batch_size(2) == 1:
            reflection = StockReflectionLM(
                self.llm, runner, seed=self.seed, temperature=self.temperature, max_tokens=4096
            )
        else:
            reflection = CombeeReflection(
                self.llm, runner, strategy, seed=self.seed, temperature=self.temperature
            )
        sampler = ResizableBatchSampler(1, seed=self.seed)
        # gepa's default candidate selector, on a generator whose state a checkpoint can keep.
        selector_rng = random.Random(self.seed)
        clock = IterationClock(
            sampler,
            schedule,
            train_size=len(train_samples),
            validation_seconds=lambda: adapter.validation_seconds,
            observer=observer,
            reduce_levels=reflection.reduce_log.take,
        )
        stop = _StopFlag()
        parts: dict[str, object] = {
            "sampler": sampler, "reflection": reflection, "strategy": strategy,
            "schedule": schedule,
        }  # fmt: skip
        callbacks: list[object] = [clock]
        checkpoint = None
        state_dir = None if self.run_dir is None else self.run_dir / GEPA_STATE_DIR
        if state_dir is not None:
            state_dir.mkdir(parents=True, exist_ok=True)
            if resume is not None:
                restore_gepa_state(state_dir, resume.parts)
                restore_parts(parts, resume.parts)
                set_rng_state(selector_rng, resume.rng)
            checkpoint = GepaCheckpoint(
                state_dir,
                observer,
                parts,
                selector_rng,
                train_size=len(train_samples),
                component=COMPONENT,
                earlier_seconds=0.0 if resume is None else resume.train_seconds,
                stop=stop.event.set,
            )
            callbacks.append(checkpoint)
        elif resume is not None:
            raise ConfigError("a GEPA run continues only from its run directory", setting="run_dir")

        def run_gepa() -> GEPAResult[str, int]:
            return optimize(
                seed_candidate={COMPONENT: context},
                trainset=list(train_samples),
                valset=valset,
                adapter=cast("GEPAAdapter[Sample, Attempt, str]", adapter),
                reflection_lm=reflection if isinstance(reflection, StockReflectionLM) else None,
                reflection_strategy=reflection
                if isinstance(reflection, CombeeReflection)
                else None,
                candidate_selection_strategy=ParetoCandidateSelector(rng=selector_rng),
                batch_sampler=sampler,
                reflection_minibatch_size=None,
                max_metric_calls=self.settings.max_metric_calls,
                stop_callbacks=[stop],
                callbacks=cast("list[GEPACallback]", callbacks),
                logger=_GepaLog(),
                run_dir=None if state_dir is None else str(state_dir),
                seed=self.seed,
            )

        started = time.perf_counter()
        try:
            result = await asyncio.to_thread(run_gepa)
        except BaseException:
            stop.event.set()
            raise
        if checkpoint is not None and checkpoint.error is not None:
            raise checkpoint.error
        earlier = 0.0 if resume is None else resume.train_seconds
        train_seconds = earlier + time.perf_counter() - started
        best = str(result.candidates[result.best_idx][COMPONENT])
        if self.run_dir is not None:
            (self.run_dir / "gepa_result.json").write_text(
                json.dumps(result.to_dict(), indent=2, default=str) + "\n", encoding="utf-8"
            )
        self._results = {
            "seed_val_accuracy": result.val_aggregate_scores[0],
            "candidates": result.num_candidates,
            "best_candidate": result.best_idx,
            "metric_calls": result.total_metric_calls,
            "validation_seconds": round(adapter.validation_seconds, 3),
            "reflection": {
                "step": "gepa stock" if isinstance(reflection, StockReflectionLM) else "strategy",
                **vars(reflection.usage),
            },
        }
        return LoopOutcome(
            final_context=best,
            best_context=best,
            best_val_accuracy=result.val_aggregate_scores[result.best_idx],
            iterations=(0 if resume is None else resume.iteration) + len(clock.timings),
            train_seconds=train_seconds,
        )
