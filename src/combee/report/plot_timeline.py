"""The report's iteration timeline: one row per run, one bar per iteration, every run labelled
with its iterations and their reduce calls."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from combee.report.plot_style import COLORS, save
from combee.report.runs_index import RunInfo, number


def _levels(row: dict[str, Any]) -> str | None:
    """``2+1``: the reduce calls at each level of one iteration (None when not recorded)."""
    levels = row.get("reduce_levels")
    if isinstance(levels, list) and levels:
        return "+".join(str(level) for level in levels)
    return None


def run_label(metrics: Sequence[dict[str, Any]]) -> str:
    """What a timeline row says after its last bar: the iterations, and their reduce calls
    per level (``4 iterations, reduce calls 2+1 each``; ``3 iterations, reduce calls 2+1 ×2,
    1 ×1``)."""
    count = len(metrics)
    label = f"{count} iteration{'s' if count != 1 else ''}"
    levels = [found for row in metrics if (found := _levels(row)) is not None]
    if not levels:
        return label
    kinds = sorted(set(levels), key=levels.index)
    if len(kinds) == 1 and len(levels) == count:
        return f"{label}, reduce calls {kinds[0]}" + (" each" if count > 1 else "")
    return f"{label}, reduce calls " + ", ".join(f"{k} ×{levels.count(k)}" for k in kinds)


_CHAR_INCHES = 0.055
"""About how wide one character of a 7-point label is."""


def timeline(plt: Any, runs: Sequence[RunInfo], path: Path) -> str | None:
    """One row per run: each iteration a bar as long as its wall time, labelled (when it is wide
    enough) with the reduce calls at each level; after the last bar, the run's iterations and
    their reduce calls, so every run is labelled however narrow its bars."""
    rows = [run for run in runs if any(number(m.get("wall_s")) for m in run.metrics)]
    if not rows:
        return None
    width = 11.0
    figure, axis = plt.subplots(figsize=(width, 1.2 + 0.5 * len(rows)))
    longest = max(sum(number(m.get("wall_s")) or 0.0 for m in run.metrics) for run in rows)
    span = longest * 1.45  # room after the longest run for its label
    per_inch = span / (width * 0.78)  # seconds per inch of the plotting area, roughly
    inside = False
    for y, run in enumerate(rows):
        start = 0.0
        for i, row in enumerate(run.metrics):
            wall = number(row.get("wall_s")) or 0.0
            axis.broken_barh([(start, wall)], (y - 0.35, 0.7), facecolors=COLORS[i % 2], alpha=0.8)
            label = _levels(row)
            if label is not None and wall >= (len(label) + 2) * _CHAR_INCHES * per_inch:
                axis.text(start + wall / 2, y, label, ha="center", va="center", fontsize=7)
                inside = True
            start += wall
        axis.text(
            start + 0.01 * span, y, run_label(run.metrics), ha="left", va="center", fontsize=7
        )
    axis.set_xlim(0, span)
    axis.set_yticks(range(len(rows)))
    axis.set_yticklabels([run.name for run in rows], fontsize=8)
    axis.invert_yaxis()
    axis.set_xlabel("training wall time (s); one bar per iteration, colours alternate")
    recorded = any(_levels(m) for run in rows for m in run.metrics)
    axis.set_title(
        "Iterations per run"
        + (" (labels: reduce calls per level, e.g. 2+1 = two curate calls, then one merge)"
           if recorded else ""),
        fontsize=10,
    )  # fmt: skip
    axis.grid(True, axis="x", alpha=0.3)
    save(plt, figure, path)
    caption = (
        "Each bar is one training iteration, as long as its wall time; after a run's last bar, "
        "its number of iterations"
    )
    if recorded:
        caption += (
            " and the reduce calls of each (curate calls at the first level, then merge calls)"
            + ("; a bar wide enough for it repeats its own" if inside else "")
        )
    return caption + "."
