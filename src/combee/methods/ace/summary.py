"""A condensed reflection: the lessons of several reflections in one (ACE's ``condense``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from combee.core.types import Reflection


@dataclass(frozen=True)
class Summary(Reflection):
    """What one ``summarize`` call kept of ``covers`` reflections: an overview and one
    ``key_insight`` line per distinct lesson, so a curator (or a further condensing call) reads
    each lesson as it would read a reflection's."""

    covers: int = 1
    """How many original reflections this summary stands for."""
    correct_count: int = 0
    """How many of them came from a correct attempt."""

    @property
    def key_insights(self) -> list[str]:
        found = self.fields.get("key_insights")
        return [str(item) for item in found] if isinstance(found, list) else []

    def render(self) -> str:
        wrong = self.covers - self.correct_count
        lines = [
            f"summary of {self.covers} reflection(s) ({self.correct_count} correct, {wrong} wrong):"
        ]
        overview = str(self.fields.get("summary", "")).strip()
        if overview:
            lines.append(f"  summary: {overview}")
        lines.extend(f"  key_insight: {insight}" for insight in self.key_insights)
        return "\n".join(lines)


def summary_of(reply: Mapping[str, Any], reflections: Sequence[Reflection]) -> Summary:
    """The :class:`Summary` of ``reflections`` from a ``summarize`` reply (blank or repeated
    lessons dropped)."""
    found = reply.get("key_insights")
    insights: list[str] = []
    for item in found if isinstance(found, list) else []:
        text = " ".join(str(item).split())
        if text and text not in insights:
            insights.append(text)
    covers = sum(r.covers if isinstance(r, Summary) else 1 for r in reflections)
    correct = sum(
        r.correct_count if isinstance(r, Summary) else int(r.correct) for r in reflections
    )
    return Summary(
        sample_id="+".join(r.sample_id for r in reflections),
        fields={"summary": str(reply.get("summary", "")).strip(), "key_insights": insights},
        correct=bool(reflections) and correct == covers,
        covers=covers,
        correct_count=correct,
    )
