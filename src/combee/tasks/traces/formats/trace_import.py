"""What an import of trace files found: the traces, and the files and traces left out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from combee.tasks.traces.model import Trace

COMPANION_FILES = frozenset(
    {
        "result.json",
        "results.json",
        "report.json",
        "config.json",
        "summaries.json",
        "results_summary.json",
    }
)
"""Files that sit beside traces in the folders agent harnesses write (a trial's result, a
run's configuration, a benchmark report): read by the readers that need them, never traces."""


@dataclass(frozen=True)
class TraceImport:
    """The traces read, how many files (and MLflow experiments) held them, the files skipped
    with their reason, and the traces left out as attempts read twice."""

    traces: list[Trace]
    files: int
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    repeated: list[Trace] = field(default_factory=list)
    experiments: int = 0
    """MLflow experiments read (``mlflow:EXPERIMENT``), beside the files."""

    def with_outcome(self) -> int:
        return sum(1 for trace in self.traces if trace.outcome.known)

    def record(self) -> dict[str, Any]:
        """The figures, as a run's ``config.json`` keeps them."""
        return {
            "traces": len(self.traces),
            "files": self.files,
            "experiments": self.experiments,
            "with_outcome": self.with_outcome(),
            "skipped_files": {str(path): why for path, why in self.skipped},
            "repeated_ids": len(self.repeated),
        }

    def summary(self, cut: int | None = None, budget: int | None = None) -> str:
        """One line: ``200 traces from 1 file, 200 with an outcome, 11 cut to 1200 tokens``
        (``cut``: how many are longer than ``budget``), then what was left out."""
        sources = [f"{self.files} file{'s' if self.files != 1 else ''}"] if self.files else []
        if self.experiments:
            plural = "s" if self.experiments != 1 else ""
            sources.append(f"{self.experiments} MLflow experiment{plural}")
        parts = [f"{len(self.traces)} traces from {' and '.join(sources) or 'nothing'}"]
        parts.append(f"{self.with_outcome()} of {len(self.traces)} with an outcome")
        if cut is not None and budget is not None:
            parts.append(f"{cut} cut to {budget} tokens for the reflector")
        odd = [(path, why) for path, why in self.skipped if path.name not in COMPANION_FILES]
        if odd:
            named = "; ".join(f"{path.name}: {why}" for path, why in odd[:3])
            more = f"; and {len(odd) - 3} more" if len(odd) > 3 else ""
            parts.append(f"{len(odd)} file(s) skipped ({named}{more})")
        if self.repeated:
            parts.append(f"{len(self.repeated)} attempt(s) read twice left out")
        return ", ".join(parts)
