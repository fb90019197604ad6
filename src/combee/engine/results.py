"""What :func:`combee.train` and :func:`combee.evaluate` return."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from combee.core.evaluate import Evaluation, SampleFailure
from combee.llm.types import RoleUsage
from combee.runs.recorder import usage_totals


def usage_summary(usage: Mapping[str, RoleUsage]) -> dict[str, Any]:
    """Calls, tokens and cost per role, as results files record them."""
    return {
        "llm_calls": {role: u.calls for role, u in usage.items()},
        "tokens": {
            role: {"prompt": u.prompt_tokens, "completion": u.completion_tokens}
            for role, u in usage.items()
        },
        "cost": round(sum(u.cost for u in usage.values()), 6),
        "usage": usage_totals(usage),
    }


@dataclass
class TrainResult:
    """A finished training run.

    ``context`` is the learned context (the best on validation, else the last), ``text`` its
    text form (what ``playbook.txt`` / ``prompt.txt`` holds), ``summary`` the figures of
    ``final_results.json``.
    """

    context: Any
    final_context: Any
    text: str
    summary: dict[str, Any]
    run_dir: Path | None = None
    failures: list[SampleFailure] = field(default_factory=list)

    @property
    def test_accuracy(self) -> float | None:
        value = self.summary.get("test_accuracy")
        return None if value is None else float(value)

    @property
    def baseline_test_accuracy(self) -> float | None:
        value = self.summary.get("baseline_test_accuracy")
        return None if value is None else float(value)

    @property
    def train_seconds(self) -> float:
        return float(self.summary["train_seconds"])

    @property
    def llm_calls(self) -> dict[str, int]:
        return dict(self.summary["llm_calls"])


@dataclass
class EvalResult:
    """An evaluation of one context on samples."""

    task: str
    split: str
    evaluation: Evaluation
    seconds: float
    usage: dict[str, Any]

    @property
    def accuracy(self) -> float:
        return self.evaluation.accuracy()

    def to_dict(self, *, predictions: bool = False) -> dict[str, Any]:
        report: dict[str, Any] = {
            "task": self.task,
            "split": self.split,
            "samples": self.evaluation.samples,
            "accuracy": self.accuracy,
            "failed_samples": len(self.evaluation.failures),
            "seconds": round(self.seconds, 3),
            "llm_calls": self.usage["llm_calls"],
        }
        if predictions:
            report["predictions"] = [
                {
                    "sample_id": t.sample.id,
                    "prediction": t.prediction,
                    "answer": t.sample.answer,
                    "correct": t.score.correct,
                }
                for t in self.evaluation.trajectories
            ] + [dataclasses.asdict(f) for f in self.evaluation.failures]
        return report
