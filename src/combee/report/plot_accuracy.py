"""The report's accuracy figures: against training time (the Pareto front) and against batch
size (the paper's quality curve), each strategy and batch size at its mean over seeds."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from combee.report.plot_style import (
    MARKERS,
    LineStyle,
    accuracy_axes,
    color_of,
    kind_of,
    save,
    shift_percent,
    sizes_axis,
)
from combee.report.runs_index import RunInfo
from combee.report.summary import Group, front_of, groups_of, scored
from combee.report.table import row_of


def accuracy_vs_time(plt: Any, runs: Sequence[RunInfo], path: Path) -> str | None:
    """One marker per strategy and batch size at its mean over seeds (colour: strategy, shape:
    batch size), bars over the seeds' min–max, each run a faint dot, the Pareto front circled."""
    rows = {row["name"]: row for row in map(row_of, runs)}
    groups = scored(groups_of(list(rows.values())))
    if not groups:
        return None
    with_method = len({g.method for g in groups}) > 1
    figure, axis = plt.subplots(figsize=(9.5, 4.8))
    kinds: list[str] = []
    batches: list[str] = []
    spread = False
    for group in groups:
        assert group.accuracy is not None and group.seconds is not None
        color = color_of(kinds, kind_of(group, with_method))
        if group.batch not in batches:
            batches.append(group.batch)
        marker = MARKERS[batches.index(group.batch) % len(MARKERS)]
        singles = [rows[name] for name in group.runs if name in rows]
        singles = [r for r in singles if r["test_accuracy"] is not None and r["train_seconds"]]
        axis.scatter(
            [r["train_seconds"] for r in singles],
            [r["test_accuracy"] for r in singles],
            color=color, marker=marker, s=14, alpha=0.35, zorder=2,
        )  # fmt: skip
        x, y = group.seconds, group.accuracy
        if y.count > 1:
            spread = True
            axis.errorbar(
                [x.mean], [y.mean],
                xerr=[[x.mean - x.low], [x.high - x.mean]],
                yerr=[[y.mean - y.low], [y.high - y.mean]],
                color=color, alpha=0.6, linewidth=1, capsize=3, zorder=2,
            )  # fmt: skip
        axis.scatter(
            [x.mean], [y.mean], color=color, marker=marker, s=70, zorder=3,
            edgecolors="white", linewidths=0.6,
            label=f"{kind_of(group, with_method)}, batch {group.batch} (n={y.count})",
        )  # fmt: skip
    front = front_of(groups)
    points = [(g.seconds.mean, g.accuracy.mean) for g in front if g.seconds and g.accuracy]
    if len(points) > 1:
        axis.step(
            [p[0] for p in points], [p[1] for p in points], where="post",
            color="black", linewidth=1, linestyle="--", zorder=1,
        )  # fmt: skip
    axis.scatter(
        [p[0] for p in points], [p[1] for p in points], s=260,
        facecolors="none", edgecolors="black", zorder=4, label="Pareto front",
    )  # fmt: skip
    seconds = [g.seconds.mean for g in groups if g.seconds is not None]
    log = min(seconds) > 0 and max(seconds) / min(seconds) >= 20
    if log:
        axis.set_xscale("log")
    accuracy_axes(
        axis,
        "mean training wall time (s)" + (", log scale" if log else ""),
        "Test accuracy against training time (mean over seeds)",
    )
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    save(plt, figure, path)
    caption = (
        "Each large marker is one strategy at one batch size, at its mean test accuracy and mean "
        "training wall time over seeds (colour: strategy; shape: batch size; n: runs averaged)"
    )
    caption += (
        "; the bars span the seeds' min–max on both axes and the faint small dots are the single "
        "runs"
        if spread
        else "; every configuration has one run, so there is no spread to show"
    )
    if len(points) > 1:
        return caption + (
            ". Circled markers, joined by the dashed line, are the Pareto front: no other "
            "configuration is both faster and more accurate on average."
        )
    return caption + (
        ". The circled marker is the Pareto front alone: it is as fast as any other "
        "configuration and as accurate, on average."
    )


def accuracy_vs_batch_size(plt: Any, runs: Sequence[RunInfo], path: Path) -> str | None:
    """Mean test accuracy against the batch size trained at, one line per strategy (the paper's
    quality curve); a strategy that never batches is one point at batch size 1. Drawn when the
    runs span at least two batch sizes."""
    rows = [row_of(run) for run in runs]
    groups = [g for g in groups_of(rows) if g.accuracy is not None and g.batch_size]
    sizes = sorted({float(g.batch_size) for g in groups if g.batch_size})
    if len(sizes) < 2:
        return None
    with_method = len({g.method for g in groups}) > 1
    lines: dict[str, list[Group]] = {}
    for group in groups:
        lines.setdefault(kind_of(group, with_method), []).append(group)
    figure, axis = plt.subplots(figsize=(9.5, 4.8))
    kinds: list[str] = []
    spread = False
    for index, (name, members) in enumerate(lines.items()):
        style = LineStyle.of(index, len(lines))
        members.sort(key=lambda g: g.batch_size or 0.0)
        xs = [(g.batch_size or 0.0) * style.shift for g in members]
        stats = [g.accuracy for g in members if g.accuracy is not None]
        color = color_of(kinds, name)
        if any(s.count > 1 for s in stats):
            spread = True
            axis.errorbar(
                xs, [s.mean for s in stats],
                yerr=[[s.mean - s.low for s in stats], [s.high - s.mean for s in stats]],
                fmt="none", color=color, alpha=0.6, capsize=3, linewidth=1,
            )  # fmt: skip
        axis.plot(
            xs, [s.mean for s in stats], marker=style.marker, linestyle=style.linestyle,
            markersize=style.size, color=color, label=name, linewidth=1.6,
        )  # fmt: skip
    baselines = [b for g in groups if (b := g.baseline) is not None]
    caption = (
        "Mean test accuracy over seeds against the batch size each configuration trained at, one "
        "line per strategy (the paper's quality curve)"
        + ("; the bars span the seeds' min–max" if spread else "")
        + "."
    )
    if len(lines) > 1:
        caption += (
            " Lines differ in marker and line style, and each is shifted sideways by up to "
            f"±{shift_percent(len(lines)):.0f}% of the batch size so that equal lines stay "
            "visible; the ticks mark the real sizes."
        )
    if baselines:
        count = sum(b.count for b in baselines)
        level = sum(b.mean * b.count for b in baselines) / count
        axis.axhline(level, color="grey", linestyle=":", label="start context (no learning)")
        caption += (
            f" The dotted grey line is the start context's test accuracy ({level:.3f}, the mean "
            f"over the {count} run(s) that scored it with --baseline)."
        )
    sizes_axis(axis, sizes)
    accuracy_axes(axis, "batch size", "Test accuracy against batch size (mean over seeds)")
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    save(plt, figure, path)
    return caption
