"""The ACE method's running totals of lessons: applied, rejected, evicted, dropped, repaired,
combined and screened out, kept in a run's checkpoint."""

from __future__ import annotations

from collections import Counter
from typing import Any

from combee.methods.ace.operations import ApplyResult


class LessonCounts:
    """Running totals of what :meth:`AceMethod.apply` reported."""

    def __init__(self) -> None:
        self.applied = 0
        self.rejected = 0
        self.evicted = 0
        self.dropped: Counter[str] = Counter()
        self.repaired: Counter[str] = Counter()
        self.combined = 0
        self.near_duplicates = 0
        self.screened: Counter[str] = Counter()
        self.planted_shown = 0
        """Reflections on episodes that carried planted instructions (an attack's)."""
        self.planted_in_lessons = 0
        """Of those, the lessons that still repeat planted text after the screen."""
        self.sources: Counter[str] = Counter()
        """Where the reflections' lessons came from (:mod:`combee.methods.ace.grounding`):
        ``dropped`` counts the remarks on the playbook that no feedback could replace."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "applied": self.applied,
            "rejected": self.rejected,
            "evicted": self.evicted,
            "planted_shown": self.planted_shown,
            "planted_in_lessons": self.planted_in_lessons,
            "dropped": dict(self.dropped),
            "repaired": dict(self.repaired),
            "combined": self.combined,
            "near_duplicates": self.near_duplicates,
            "screened": dict(self.screened),
            "lesson_sources": dict(self.sources),
        }

    def load(self, data: dict[str, Any]) -> None:
        self.applied = int(data.get("applied", 0))  # absent from older checkpoints
        self.rejected = int(data.get("rejected", 0))
        self.evicted = int(data.get("evicted", 0))
        self.dropped = Counter(data["dropped"])
        self.repaired = Counter(data["repaired"])
        self.combined = int(data["combined"])
        self.near_duplicates = int(data["near_duplicates"])
        self.screened = Counter(data.get("screened", {}))
        self.planted_shown = int(data.get("planted_shown", 0))
        self.planted_in_lessons = int(data.get("planted_in_lessons", 0))
        self.sources = Counter(data.get("lesson_sources", {}))

    def add(self, result: ApplyResult) -> None:
        self.applied += len(result.applied)
        self.rejected += len(result.rejected)
        self.evicted += len(result.evicted)
        self.dropped.update(result.dropped)
        self.repaired.update(result.repaired)
        self.combined += result.combined
        self.near_duplicates += result.near_duplicates
