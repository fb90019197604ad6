"""The paper's summarization baselines.

- ``summarize``: one condensing call over all reflections, then one curate call over the
  summary.
- ``hier-summarize``: each reflection condensed on its own (all calls concurrently), one more
  call condenses those summaries, then one curate call over the result.

Both run at the requested batch size (like ``naive`` and ``combee``) and need a method that
can condense (:class:`~combee.core.types.Condenser`: ACE and GEPA both can).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any, TypeVar

from combee.core.call_counts import CallRange
from combee.core.types import Condenser, Method, ReduceTrace, Reflection
from combee.errors import ConfigError, LLMCallError
from combee.strategies.single_call import curate_or_skip

C = TypeVar("C")
U = TypeVar("U")

log = logging.getLogger(__name__)


def condenser_of(method: Any, strategy: str) -> Condenser[Any]:
    """``method`` as a :class:`Condenser`; ConfigError naming ``strategy`` when it cannot
    condense."""
    if not isinstance(method, Condenser):
        raise ConfigError(
            f"{strategy!r} needs a method that can condense reflections (an async "
            f"condense(context, reflections) method); {type(method).__name__} has none. "
            "Choose another strategy, or add condense to the method",
            setting="strategy",
        )
    return method


class SummarizeStrategy:
    """Condense the whole batch's reflections in one call, then curate the summary once."""

    name = "summarize"

    def batch_size(self, requested: int) -> int:
        return requested

    def reduce_calls(self, n: int) -> dict[str, CallRange]:
        return {"condense": CallRange.exactly(1), "curate": CallRange.exactly(1)} if n else {}

    async def reduce(
        self, method: Method[C, U], context: C, reflections: Sequence[Reflection]
    ) -> ReduceTrace[U]:
        condenser = condenser_of(method, self.name)
        trace: ReduceTrace[U] = ReduceTrace()
        if not reflections:
            return trace
        trace.levels.append([list(range(len(reflections)))])
        summary = await condenser.condense(context, reflections)
        trace.levels.append([[0]])
        trace.update = await curate_or_skip(method, context, [summary])
        return trace


class HierSummarizeStrategy:
    """Condense every reflection on its own (concurrently), condense those summaries in one
    call, then curate the result once.

    A per-reflection call that fails (:class:`LLMCallError`) is logged and its reflection left
    out; with a single summary left, the second condensing call is skipped.
    """

    name = "hier-summarize"

    def batch_size(self, requested: int) -> int:
        return requested

    def reduce_calls(self, n: int) -> dict[str, CallRange]:
        """One condensing step per reflection, one more over their summaries (with two or
        more), one curate step."""
        if not n:
            return {}
        condense = n + 1 if n > 1 else n
        return {"condense": CallRange.exactly(condense), "curate": CallRange.exactly(1)}

    async def reduce(
        self, method: Method[C, U], context: C, reflections: Sequence[Reflection]
    ) -> ReduceTrace[U]:
        condenser = condenser_of(method, self.name)
        trace: ReduceTrace[U] = ReduceTrace()
        if not reflections:
            return trace
        trace.levels.append([[i] for i in range(len(reflections))])
        results = await asyncio.gather(
            *(condenser.condense(context, [reflection]) for reflection in reflections),
            return_exceptions=True,
        )
        summaries: list[Reflection] = []
        for index, result in enumerate(results):
            if isinstance(result, LLMCallError):
                log.warning("summary of reflection %d failed and is skipped: %s", index, result)
            elif isinstance(result, BaseException):
                raise result
            else:
                summaries.append(result)
        if not summaries:
            return trace
        if len(summaries) > 1:
            trace.levels.append([list(range(len(summaries)))])
            summaries = [await condenser.condense(context, summaries)]
        trace.levels.append([[0]])
        trace.update = await curate_or_skip(method, context, summaries)
        return trace
