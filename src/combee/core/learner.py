"""What the run engine needs from a method: a context to start from, a text form of it, how it
trains and how it is evaluated.

:class:`LoopLearner` gives any :class:`combee.core.types.Method` (ACE, or a user's own) Combee's
training loop. A method with its own engine (GEPA, through the ``gepa`` library) implements
:class:`Learner` directly and still takes the run's strategy, batch schedule, executor and
observer, so every method shares the strategies, the controller and the run directory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from combee.core.batch_schedule import BatchSchedule
from combee.core.evaluate import Evaluation, evaluate
from combee.core.executor import Executor
from combee.core.loop import run_loop
from combee.core.loop_observer import LoopObserver
from combee.core.loop_reports import LoopOutcome
from combee.core.loop_settings import LoopSettings
from combee.core.loop_state import LoopState
from combee.core.types import Method, Strategy
from combee.errors import ConfigError, parameter
from combee.tasks.base import Sample, Score

C = TypeVar("C")


@runtime_checkable
class ReportsIterations(Protocol):
    """An optional capability of a learner: an iteration's figures for ``metrics.jsonl``, the
    context's size and what the iteration's update did to it (ACE: operations applied,
    lessons dropped); a learner without it gives :meth:`Learner.stats`."""

    def iteration_stats(self, context: Any) -> Mapping[str, Any]: ...


@runtime_checkable
class Learner(Protocol[C]):
    """A method as the run engine drives it."""

    name: str
    context_file: str
    """The file name of the learned context in a run directory (``playbook.txt``)."""

    def initial_context(self, text: str | None) -> C:
        """The context to start from: parsed from ``text`` (a file's contents), or the default."""
        ...

    def render(self, context: C) -> str: ...

    def stats(self, context: C) -> Mapping[str, Any]:
        """Size figures of a context for metrics and results (bullets, tokens, ...)."""
        ...

    async def evaluate(
        self,
        context: C,
        samples: Sequence[Sample],
        *,
        executor: Executor,
        on_done: Callable[[], None] | None = None,
    ) -> Evaluation: ...

    async def fit(
        self,
        context: C,
        train_samples: Sequence[Sample],
        val_samples: Sequence[Sample],
        *,
        strategy: Strategy,
        schedule: BatchSchedule,
        executor: Executor,
        observer: LoopObserver,
        config: LoopSettings,
        resume: LoopState[C] | None = None,
    ) -> LoopOutcome[C]: ...

    def results(self) -> Mapping[str, Any]:
        """Method-specific figures for the final results (GEPA: candidates, metric calls)."""
        ...

    resumable: bool
    """Whether :meth:`fit` continues from a :class:`LoopState` (a run's checkpoint); when
    False, a run is not checkpointed and a rerun starts afresh."""

    def dump_context(self, context: C) -> Any:
        """A context as JSON data for a checkpoint."""
        ...

    def load_context(self, data: Any) -> C:
        """A context back from :meth:`dump_context`'s data."""
        ...


class LoopLearner(Generic[C]):
    """A :class:`Method` trained by Combee's loop.

    ``parse`` turns a saved context's text back into a context (None: a start text is refused
    and ``initial`` is the start); ``render`` writes one; ``stats`` measures one.
    """

    context_file = "context.txt"

    def __init__(
        self,
        method: Method[C, Any],
        score: Callable[[str, Sample], Score],
        *,
        initial: C | None = None,
        parse: Callable[[str], C] | None = None,
        render: Callable[[C], str] = str,
        stats: Callable[[C], Mapping[str, Any]] | None = None,
        name: str | None = None,
    ) -> None:
        self.method = method
        self.score = score
        self.name = name or type(method).__name__
        self._initial = initial
        self._parse = parse
        self._render = render
        self._stats = stats

    def initial_context(self, text: str | None) -> C:
        if text is not None:
            if self._parse is None:
                raise ConfigError(
                    f"cannot be read by method {self.name!r} (it has no parser); "
                    f"pass the context object as {parameter('initial_context')} instead",
                    setting="initial_context",
                )
            return self._parse(text)
        if self._initial is None:
            raise ConfigError(
                f"is needed by method {self.name!r}: pass the context to start from",
                setting="initial_context",
            )
        return self._initial

    def render(self, context: C) -> str:
        return self._render(context)

    def stats(self, context: C) -> Mapping[str, Any]:
        return self._stats(context) if self._stats is not None else {}

    async def evaluate(
        self,
        context: C,
        samples: Sequence[Sample],
        *,
        executor: Executor,
        on_done: Callable[[], None] | None = None,
    ) -> Evaluation:
        return await evaluate(
            self.method, context, samples, score=self.score, on_done=on_done, executor=executor
        )

    async def fit(
        self,
        context: C,
        train_samples: Sequence[Sample],
        val_samples: Sequence[Sample],
        *,
        strategy: Strategy,
        schedule: BatchSchedule,
        executor: Executor,
        observer: LoopObserver,
        config: LoopSettings,
        resume: LoopState[C] | None = None,
    ) -> LoopOutcome[C]:
        return await run_loop(
            self.method,
            strategy,
            context,
            train_samples,
            val_samples,
            schedule=schedule,
            score=self.score,
            config=config,
            observer=observer,
            executor=executor,
            resume=resume,
        )

    resumable = True
    """Whether :meth:`fit` continues from a :class:`LoopState` (a run's checkpoint)."""

    def dump_context(self, context: C) -> Any:
        """A context as JSON data for a checkpoint (default: its text)."""
        return self.render(context)

    def load_context(self, data: Any) -> C:
        """A context back from :meth:`dump_context`'s data."""
        return self.initial_context(str(data))

    def results(self) -> Mapping[str, Any]:
        return {}
