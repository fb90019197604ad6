"""GEPA through the ``gepa`` library, with Combee's shuffle + scan reflection.

- :class:`CombeeReflection`: ``gepa.optimize(..., reflection_strategy=...)``.
- :class:`TaskAdapter`: a ``GEPAAdapter`` for Combee tasks; the candidate is a system prompt.
- :class:`ResizableBatchSampler`, :func:`plan_for`, :class:`IterationTimer`: batch-size strategies
  (``sequential``, ``naive``, ``combee``, ``auto``) through gepa's ``batch_sampler`` seam.
- :class:`CombeeInstructionProposer`: ``dspy.GEPA(instruction_proposer=...)``.
- :class:`LoopRunner`: bridges gepa's synchronous engine to the async LLM client.
"""

from combee.methods.gepa.adapter import COMPONENT, DEFAULT_SEED_PROMPT, Attempt, TaskAdapter
from combee.methods.gepa.batching import (
    GEPA_STRATEGIES,
    SEQUENTIAL_MINIBATCH,
    GepaPlan,
    IterationTimer,
    IterationTiming,
    plan_for,
)
from combee.methods.gepa.dspy_proposer import CombeeInstructionProposer
from combee.methods.gepa.reflection import CombeeReflection, Grouping, ReflectionUsage
from combee.methods.gepa.runner import LoopRunner
from combee.methods.gepa.sampler import ResizableBatchSampler

__all__ = [
    "COMPONENT",
    "DEFAULT_SEED_PROMPT",
    "GEPA_STRATEGIES",
    "SEQUENTIAL_MINIBATCH",
    "Attempt",
    "CombeeInstructionProposer",
    "CombeeReflection",
    "GepaPlan",
    "Grouping",
    "IterationTimer",
    "IterationTiming",
    "LoopRunner",
    "ReflectionUsage",
    "ResizableBatchSampler",
    "TaskAdapter",
    "plan_for",
]
