"""A DSPy instruction proposer: ``dspy.GEPA(metric=..., instruction_proposer=...)``.

DSPy calls it with keywords ``candidate``, ``reflective_dataset`` and ``components_to_update``
and expects ``{component: new instruction}``. It needs no DSPy import: it satisfies gepa's
``ProposalFn`` protocol, which is what DSPy's GEPA accepts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from combee.core.types import Strategy
from combee.llm.client import LLM
from combee.llm.connect import Endpoint
from combee.methods.gepa.reflection import CombeeReflection
from combee.methods.gepa.runner import LoopRunner
from combee.strategies.combee import CombeeStrategy


class CombeeInstructionProposer:
    """Shuffle + scan instruction proposals for DSPy's GEPA, over Combee's LLM layer.

    ``strategy`` reduces each component's records (default: ``CombeeStrategy(seed=seed)``, with
    the duplication and fan-in :class:`combee.strategies.settings.CombeeSettings` declares;
    ``NaiveStrategy()`` makes one proposal call over all records). The proposer
    runs its calls on a private event loop thread; :meth:`close` (or ``with``) releases the LLM
    and the thread.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        strategy: Strategy | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        max_tokens: int = 4096,
    ) -> None:
        if strategy is None:
            strategy = CombeeStrategy(seed=seed)
        self.llm = llm
        self.runner = LoopRunner()
        self.reflection = CombeeReflection(
            llm,
            self.runner,
            strategy,
            seed=seed,
            temperature=temperature,
            max_tokens=max_tokens,
        )

    @classmethod
    def from_endpoint(
        cls,
        endpoint: Endpoint | str,
        *,
        strategy: Strategy | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        max_tokens: int = 4096,
        **settings: Any,
    ) -> CombeeInstructionProposer:
        """A proposer talking to any endpoint: an :class:`Endpoint`, or a model name with the
        settings of :func:`combee.llm.connect` (``base_url``, ``api_key_env``, ...)."""
        target = endpoint if isinstance(endpoint, Endpoint) else Endpoint(endpoint, **settings)
        return cls(
            target.connect(),
            strategy=strategy,
            seed=seed,
            temperature=temperature,
            max_tokens=max_tokens,
        )

    def __call__(
        self,
        candidate: dict[str, str],
        reflective_dataset: Mapping[str, Sequence[Mapping[str, Any]]],
        components_to_update: list[str],
    ) -> dict[str, str]:
        proposal, _ = self.reflection.reflect(candidate, reflective_dataset, components_to_update)
        return dict(proposal.new_texts)

    def close(self) -> None:
        if self.runner.loop.is_closed():
            return
        self.runner.run(self.llm.aclose())
        self.runner.close()

    def __enter__(self) -> CombeeInstructionProposer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
