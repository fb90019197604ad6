"""What the report answers first: which configuration to use. Runs in numeric order with their
seeds together, each strategy × batch size summarised over its seeds, its Pareto front between
test accuracy and training time (the sentence recommending one is
:mod:`combee.report.recommend`). Pure functions over the table's rows
(:func:`combee.report.table.row_of`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from combee.report.runs_index import number

SPREAD = "min–max over seeds, and the sample standard deviation (n−1) when there are two or more"
"""How the summary's spread is measured (said on the page and in report.json)."""

TIE_DIGITS = 2
"""Mean accuracies equal at this many decimals are a tie (the sentence shows this many)."""


@dataclass(frozen=True)
class Stat:
    """Mean, min, max and sample standard deviation (None for one value) of some figures."""

    mean: float
    low: float
    high: float
    std: float | None
    count: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Stat | None:
        if not values:
            return None
        mean = sum(values) / len(values)
        std = None
        if len(values) > 1:
            std = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
        return cls(mean, min(values), max(values), std, len(values))

    def as_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean,
            "min": self.low,
            "max": self.high,
            "std": self.std,
            "n": self.count,
        }


@dataclass(frozen=True)
class Group:
    """One strategy at one batch size, over its seeds. The figures are over finished runs."""

    method: str | None
    strategy: str | None
    batch: str
    """The batch size as shown: ``16``, or ``auto→8`` (``auto→4/8`` when seeds chose apart)."""
    batch_size: float | None
    """The batch size trained at, for ordering and plotting (the mean over seeds for auto)."""
    runs: tuple[str, ...]
    seeds: tuple[int, ...]
    """The seeds of the finished runs."""
    accuracy: Stat | None
    seconds: Stat | None
    cost: Stat | None
    baseline: Stat | None

    def label(self, with_method: bool = False) -> str:
        name = str(self.strategy) if self.strategy else "(no strategy)"
        if with_method and self.method:
            name = f"{self.method} {name}"
        return f"{name} at batch {self.batch}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "strategy": self.strategy,
            "batch": self.batch,
            "batch_size": self.batch_size,
            "runs": list(self.runs),
            "seeds": list(self.seeds),
            **{
                key: None if stat is None else stat.as_dict()
                for key, stat in (
                    ("test_accuracy", self.accuracy),
                    ("train_seconds", self.seconds),
                    ("cost", self.cost),
                    ("baseline_test_accuracy", self.baseline),
                )
            },
        }


def _kind(row: dict[str, Any]) -> tuple[str, str]:
    return str(row.get("method") or ""), str(row.get("strategy") or "")


def _batch_key(row: dict[str, Any]) -> tuple[float, str]:
    """A number to sort by (the size trained at; ``auto`` after every fixed size), then text."""
    requested = row.get("batch_size")
    if isinstance(requested, str):
        return math.inf, requested
    size = number(row.get("effective_batch_size"))
    return (math.inf, "") if size is None else (size, "")


def ordered(rows: Sequence[dict[str, Any]]) -> list[int]:
    """The indices of ``rows`` in the table's order: each method and strategy where it first
    appears, then batch size as a number (4 before 16), then seed, then run name."""
    kinds: list[tuple[str, str]] = []
    for row in rows:
        if _kind(row) not in kinds:
            kinds.append(_kind(row))

    def key(i: int) -> tuple[Any, ...]:
        row = rows[i]
        seed = row.get("seed")
        return (
            kinds.index(_kind(row)),
            _batch_key(row),
            seed is None,
            seed if isinstance(seed, int) else 0,
            str(row.get("name")),
        )

    return sorted(range(len(rows)), key=key)


def group_key(row: dict[str, Any]) -> tuple[str, str, tuple[float, str]]:
    """What the runs of one :class:`Group` share: method, strategy and batch size."""
    return (*_kind(row), _batch_key(row))


def groups_of(rows: Sequence[dict[str, Any]]) -> list[Group]:
    """One :class:`Group` per method, strategy and batch size, in the order of :func:`ordered`."""
    members: dict[tuple[str, str, tuple[float, str]], list[dict[str, Any]]] = {}
    for i in ordered(rows):
        row = rows[i]
        members.setdefault(group_key(row), []).append(row)
    return [_group(found) for found in members.values()]


def _figures(rows: Sequence[dict[str, Any]], key: str) -> Stat | None:
    values = [number(row.get(key)) for row in rows]
    return Stat.of([v for v in values if v is not None])


def _group(rows: list[dict[str, Any]]) -> Group:
    first = rows[0]
    finished = [r for r in rows if r.get("status") == "finished"]
    scored = [r for r in finished if number(r.get("test_accuracy")) is not None]
    sizes = sorted({s for r in rows if (s := number(r.get("effective_batch_size"))) is not None})
    requested = first.get("batch_size")
    shown = "/".join(f"{s:g}" for s in sizes) or "?"
    batch = f"{requested}→{shown}" if isinstance(requested, str) and sizes else shown
    if isinstance(requested, str) and not sizes:
        batch = requested
    return Group(
        method=first.get("method"),
        strategy=first.get("strategy"),
        batch=batch,
        batch_size=sum(sizes) / len(sizes) if sizes else None,
        runs=tuple(str(r.get("name")) for r in rows),
        seeds=tuple(r["seed"] for r in scored if isinstance(r.get("seed"), int)),
        accuracy=_figures(scored, "test_accuracy"),
        seconds=_figures(scored, "train_seconds"),
        cost=_figures(scored, "cost"),
        baseline=_figures(rows, "baseline_test_accuracy"),
    )


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indices of the (seconds, accuracy) points no other point beats on both (as fast or
    faster and as accurate or more, better on one), fastest first."""
    front = []
    for i, (seconds, accuracy) in enumerate(points):
        beaten = any(
            s <= seconds and a >= accuracy and (s < seconds or a > accuracy)
            for j, (s, a) in enumerate(points)
            if j != i
        )
        if not beaten:
            front.append(i)
    return sorted(front, key=lambda i: (points[i][0], -points[i][1]))


def scored(groups: Sequence[Group]) -> list[Group]:
    """The groups with a mean accuracy and a mean training time."""
    return [g for g in groups if g.accuracy is not None and g.seconds is not None]


def front_of(groups: Sequence[Group]) -> list[Group]:
    """The scored groups on the Pareto front of mean training time against mean accuracy."""
    candidates = scored(groups)
    points = [_point(g) for g in candidates]
    return [candidates[i] for i in pareto_front(points)]


def _point(group: Group) -> tuple[float, float]:
    assert group.accuracy is not None and group.seconds is not None
    return group.seconds.mean, group.accuracy.mean


def seconds_text(seconds: float) -> str:
    return f"{seconds:,.0f} s" if seconds >= 10 else f"{seconds:.2g} s"


def accuracy_text(stat: Stat) -> str:
    """``0.88 (0.81–0.94 over 2 seeds)``, or ``0.81 (1 seed)``."""
    mean = f"{stat.mean:.{TIE_DIGITS}f}"
    if stat.count == 1:
        return f"{mean} (1 seed)"
    return f"{mean} ({range_text(stat)} over {stat.count} seeds)"


def range_text(stat: Stat) -> str:
    """``0.81–0.94``: the lowest and highest value at the sentence's decimals."""
    return f"{stat.low:.{TIE_DIGITS}f}–{stat.high:.{TIE_DIGITS}f}"
