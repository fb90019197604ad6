"""The report's table of runs: one row of figures per run, and how each figure is shown."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from combee.methods.ace.settings import REPAIRS
from combee.report.runs_index import RunInfo, number, role_usage, whole

MISSING = "–"
"""How a figure a run does not have is shown (a GEPA run has no playbook bullets)."""


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    show: Callable[[Any], str]
    short: str = ""
    """A narrower header for the terminal (default: ``header``)."""


def _text(value: Any) -> str:
    return MISSING if value is None or value == "" else str(value)


def _fixed(digits: int) -> Callable[[Any], str]:
    def show(value: Any) -> str:
        figure = number(value)
        return MISSING if figure is None else f"{figure:.{digits}f}"

    return show


def _count(value: Any) -> str:
    figure = number(value)
    return MISSING if figure is None else f"{figure:,.0f}"


COLUMNS: tuple[Column, ...] = (
    Column("name", "run", _text),
    Column("method", "method", _text),
    Column("strategy", "strategy", _text),
    Column("batch", "batch size", _text, "batch"),
    Column("seed", "seed", _text),
    Column("repairs", "repairs", _text),
    Column("test_accuracy", "test accuracy", _fixed(3), "acc"),
    Column("baseline_test_accuracy", "baseline accuracy", _fixed(3), "base acc"),
    Column("train_seconds", "train s", _fixed(2)),
    Column("iterations", "iterations", _count, "iters"),
    Column("playbook_bullets", "playbook bullets", _count, "bullets"),
    Column("playbook_tokens", "playbook tokens", _count, "pb tokens"),
    Column("prompt_tokens", "prompt tokens", _count, "prompt tok"),
    Column("updates_applied", "updates applied", _count, "updates"),
    Column("llm_calls", "LLM calls", _count, "calls"),
    Column("cost", "cost (USD)", _fixed(4), "USD"),
    Column("status", "status", _text),
)
"""The table's columns, in order. ``prompt_tokens`` is a GEPA run's context size."""


def repairs(config: dict[str, Any]) -> str | None:
    """Which of ACE's repairs the run had on: ``on`` (all), ``off`` (none) or the names of those
    on; None for a method without them. A config from before they were settings had all on."""
    if config.get("method", "ace") not in ("ace", "ace-traces", "ace-agent"):
        return None
    on = [name for name in REPAIRS if config.get(name, True)]
    return "on" if len(on) == len(REPAIRS) else "+".join(on) or "off"


def effective_batch_size(run: RunInfo) -> int | None:
    """The batch size the run trained at: the controller's choice for ``auto``, else the size
    the strategy used (1 for ``sequential``), else the most common size in metrics.jsonl."""
    chosen = whole(run.final("chosen_batch_size"))
    if chosen is None and run.profile is not None:
        chosen = whole(run.profile.get("chosen"))
    if chosen is not None:
        return chosen
    effective = whole(run.config.get("effective_batch_size"))
    if effective is not None:
        return effective
    sizes = [whole(row.get("batch_size")) for row in run.metrics]
    known = [s for s in sizes if s is not None]
    return max(set(known), key=known.count) if known else None


def _batch_label(run: RunInfo) -> str | None:
    requested = run.config.get("batch_size")
    size = effective_batch_size(run)
    if isinstance(requested, str) and requested:
        return requested if size is None else f"{requested}→{size}"
    return None if size is None else str(size)


def updates_applied(run: RunInfo) -> int | None:
    """The sum of ``ops_applied`` over metrics.jsonl (None when no line records it)."""
    counts = [whole(row.get("ops_applied")) for row in run.metrics]
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def total_calls(run: RunInfo) -> int | None:
    """Every LLM call of the run (final_results ``llm_calls``, preflight included)."""
    if run.results is not None and isinstance(run.results.get("llm_calls"), dict):
        calls = [whole(v) for v in run.results["llm_calls"].values()]
        return sum(c for c in calls if c is not None)
    usage = role_usage(run)
    return int(sum(u["calls"] for u in usage.values())) if usage else None


def total_cost(run: RunInfo) -> float | None:
    if run.results is not None:
        return number(run.results.get("cost"))
    usage = role_usage(run)
    return round(sum(u["cost"] for u in usage.values()), 6) if usage else None


def row_of(run: RunInfo) -> dict[str, Any]:
    """The run's figures, raw (numbers stay numbers; missing ones are None)."""
    config = run.config
    iterations = whole(run.final("iterations")) if run.finished else len(run.metrics)
    return {
        "name": run.name,
        "path": str(run.path),
        "status": "finished" if run.finished else "unfinished",
        "task": config.get("task"),
        "method": config.get("method"),
        "strategy": config.get("strategy"),
        "batch_size": config.get("batch_size"),
        "effective_batch_size": effective_batch_size(run),
        "batch": _batch_label(run),
        "seed": whole(config.get("seed")),
        "repairs": repairs(config),
        "test_accuracy": number(run.final("test_accuracy")) if run.finished else None,
        "baseline_test_accuracy": number(run.final("baseline_test_accuracy")),
        "train_seconds": number(run.final("train_seconds")) if run.finished else _wall(run),
        "iterations": iterations,
        "playbook_bullets": whole(run.final("playbook_bullets")),
        "playbook_tokens": whole(run.final("playbook_tokens")),
        "prompt_tokens": whole(run.final("prompt_tokens")),
        "updates_applied": updates_applied(run),
        "llm_calls": total_calls(run),
        "cost": total_cost(run),
    }


def _wall(run: RunInfo) -> float | None:
    walls = [number(row.get("wall_s")) for row in run.metrics]
    known = [w for w in walls if w is not None]
    return round(sum(known), 3) if known else None


def shown(rows: Sequence[dict[str, Any]]) -> list[list[str]]:
    """Each row's cells as the table shows them, in :data:`COLUMNS` order."""
    return [[column.show(row.get(column.key)) for column in COLUMNS] for row in rows]
