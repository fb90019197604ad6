"""The report's figures (matplotlib, Agg backend). Each draws what the runs hold and returns
False when none of them holds the figures it needs; nothing here fails on a missing field."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from combee.report.runs_index import RunInfo, number, role_usage, whole
from combee.report.table import effective_batch_size, row_of, updates_applied

_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def pyplot() -> Any | None:
    """``matplotlib.pyplot`` on the Agg backend, or None when matplotlib is not installed."""
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        return importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return None


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


def _color(names: list[str], name: str) -> str:
    if name not in names:
        names.append(name)
    return _COLORS[names.index(name) % len(_COLORS)]


def _save(plt: Any, figure: Any, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def accuracy_vs_time(plt: Any, runs: Sequence[RunInfo], path: Path) -> bool:
    rows = [row_of(run) for run in runs]
    rows = [r for r in rows if r["test_accuracy"] is not None and r["train_seconds"] is not None]
    if not rows:
        return False
    figure, axis = plt.subplots(figsize=(7.5, 4.8))
    strategies: list[str] = []
    methods = {row["method"] for row in rows}
    for row in rows:
        kind = str(row["strategy"]) if len(methods) == 1 else f"{row['method']} {row['strategy']}"
        color = _color(strategies, kind)
        axis.scatter([row["train_seconds"]], [row["test_accuracy"]], color=color, zorder=3)
        axis.annotate(
            str(row["name"]),
            (row["train_seconds"], row["test_accuracy"]),
            textcoords="offset points",
            xytext=(5, 4),
            fontsize=7,
        )
    points = [(float(r["train_seconds"]), float(r["test_accuracy"])) for r in rows]
    front = pareto_front(points)
    axis.step(
        [points[i][0] for i in front],
        [points[i][1] for i in front],
        where="post",
        color="black",
        linewidth=1,
        linestyle="--",
        label="Pareto front",
    )
    axis.scatter(
        [points[i][0] for i in front],
        [points[i][1] for i in front],
        s=160,
        facecolors="none",
        edgecolors="black",
        zorder=4,
    )
    for name in strategies:
        axis.scatter([], [], color=_color(strategies, name), label=name)
    _accuracy_axes(axis, "training wall time (s)", "Test accuracy against training time")
    _save(plt, figure, path)
    return True


def _accuracy_axes(axis: Any, xlabel: str, title: str) -> None:
    axis.set_xlabel(xlabel)
    axis.set_ylabel("test accuracy")
    axis.set_ylim(-0.03, 1.03)
    axis.set_title(title, fontsize=10)
    axis.grid(True, alpha=0.3)
    axis.legend(fontsize=8)


def accuracy_vs_batch_size(plt: Any, runs: Sequence[RunInfo], path: Path) -> bool:
    """Test accuracy against the batch size the run trained at, one line per strategy (the
    paper's quality curve); a strategy that never batches is one point at batch size 1. Drawn
    when the runs span at least two batch sizes."""
    rows = [row_of(run) for run in runs]
    rows = [r for r in rows if r["test_accuracy"] is not None and r["effective_batch_size"]]
    if len({r["effective_batch_size"] for r in rows}) < 2:
        return False
    figure, axis = plt.subplots(figsize=(7.5, 4.8))
    strategies: list[str] = []
    lines: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        lines.setdefault(str(row["strategy"]), []).append(
            (float(row["effective_batch_size"]), float(row["test_accuracy"]))
        )
    for name, points in lines.items():
        points.sort()
        axis.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            marker="o",
            color=_color(strategies, name),
            label=name,
        )
    baselines = [
        r["baseline_test_accuracy"] for r in rows if r["baseline_test_accuracy"] is not None
    ]
    if baselines:
        axis.axhline(baselines[0], color="grey", linestyle=":", label="no playbook")
    axis.set_xscale("log", base=2)
    _accuracy_axes(axis, "batch size", "Test accuracy against batch size")
    _save(plt, figure, path)
    return True


def context_size(plt: Any, runs: Sequence[RunInfo], path: Path) -> bool:
    """Playbook updates applied and playbook tokens against batch size (the paper's Figure 2)."""
    series: dict[str, dict[int, list[tuple[float | None, float | None]]]] = {}
    for run in runs:
        size = effective_batch_size(run)
        applied = updates_applied(run)
        tokens = whole(run.final("playbook_tokens"))
        if size is None or (applied is None and tokens is None):
            continue
        by_size = series.setdefault(str(run.config.get("strategy")), {})
        by_size.setdefault(size, []).append(
            (None if applied is None else float(applied), None if tokens is None else float(tokens))
        )
    if not series:
        return False
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    sizes = sorted({size for by_size in series.values() for size in by_size})
    names: list[str] = []
    for panel, (axis, label) in enumerate(
        zip(axes, ("playbook updates applied", "playbook tokens"), strict=True)
    ):
        for strategy, by_size in sorted(series.items()):
            color = _color(names, strategy)
            xs, means = [], []
            for size in sorted(by_size):
                values = [v[panel] for v in by_size[size] if v[panel] is not None]
                if not values:
                    continue
                axis.scatter([size] * len(values), values, color=color, alpha=0.5, s=18)
                xs.append(size)
                means.append(sum(v for v in values if v is not None) / len(values))
            axis.plot(xs, means, "-o", color=color, label=strategy)
        if len(sizes) > 1 and sizes[-1] / max(1, sizes[0]) >= 4:
            axis.set_xscale("log", base=2)
        axis.set_xticks(sizes)
        axis.set_xticklabels([str(s) for s in sizes])
        axis.minorticks_off()
        axis.set_xlabel("batch size")
        axis.set_ylabel(label)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(
        "Context size against batch size (mean over seeds; dots: each run)", fontsize=10
    )
    _save(plt, figure, path)
    return True


def timeline(plt: Any, runs: Sequence[RunInfo], path: Path) -> bool:
    """One row per run: each iteration a bar as long as its wall time, labelled with the number
    of reduce calls at each level (``4+1``: four curate calls, then one merge)."""
    rows = [run for run in runs if any(number(m.get("wall_s")) for m in run.metrics)]
    if not rows:
        return False
    figure, axis = plt.subplots(figsize=(11, 1.0 + 0.55 * len(rows)))
    longest = max(sum(number(m.get("wall_s")) or 0.0 for m in run.metrics) for run in rows)
    for y, run in enumerate(rows):
        start = 0.0
        for i, row in enumerate(run.metrics):
            wall = number(row.get("wall_s")) or 0.0
            color = _COLORS[i % 2]
            axis.broken_barh([(start, wall)], (y - 0.35, 0.7), facecolors=color, alpha=0.8)
            levels = row.get("reduce_levels")
            if isinstance(levels, list) and levels and wall >= 0.05 * longest:
                label = "+".join(str(level) for level in levels)
                axis.text(start + wall / 2, y, label, ha="center", va="center", fontsize=7)
            start += wall
    axis.set_yticks(range(len(rows)))
    axis.set_yticklabels([run.name for run in rows], fontsize=8)
    axis.invert_yaxis()
    axis.set_xlabel("training wall time (s); one bar per iteration")
    axis.set_title("Iterations (labels: reduce calls per level, e.g. 4+1)", fontsize=10)
    axis.grid(True, axis="x", alpha=0.3)
    _save(plt, figure, path)
    return True


def llm_usage(plt: Any, runs: Sequence[RunInfo], path: Path) -> bool:
    """Calls per role and cost per role (tokens per role when no run has a price)."""
    usage = {run.name: role_usage(run) for run in runs}
    usage = {name: roles for name, roles in usage.items() if roles}
    if not usage:
        return False
    roles = sorted({role for by_role in usage.values() for role in by_role})
    priced = any(u["cost"] > 0 for by_role in usage.values() for u in by_role.values())
    figure, axes = plt.subplots(1, 2, figsize=(11, 1.4 + 0.45 * len(usage)))
    names = list(usage)
    for axis, title in zip(axes, ("LLM calls", "cost (USD)" if priced else "tokens"), strict=True):
        left = [0.0] * len(names)
        for i, role in enumerate(roles):
            values = []
            for name in names:
                figures = usage[name].get(role, {})
                if title == "LLM calls":
                    values.append(figures.get("calls", 0.0))
                elif priced:
                    values.append(figures.get("cost", 0.0))
                else:
                    values.append(
                        figures.get("prompt_tokens", 0.0) + figures.get("completion_tokens", 0.0)
                    )
            color = _COLORS[i % len(_COLORS)]
            axis.barh(names, values, left=left, color=color, label=role)
            left = [a + b for a, b in zip(left, values, strict=True)]
        axis.set_title(f"{title} per role", fontsize=10)
        axis.invert_yaxis()
        axis.tick_params(axis="y", labelsize=8)
        axis.grid(True, axis="x", alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right")
    _save(plt, figure, path)
    return True


def batch_profiles(plt: Any, runs: Sequence[RunInfo], path: Path) -> bool:
    """Per profiled run: measured ``t_iter`` and estimated epoch time ``T(b)`` at each profiled
    size, the fitted ``A * b^-alpha`` and the chosen size."""
    profiled = [
        (run, decision)
        for run in runs
        if run.profile is not None
        for decision in (run.profile.get("decisions") or [])[:1]
        if isinstance(decision, dict) and decision.get("measurements")
    ]
    if not profiled:
        return False
    columns = min(3, len(profiled))
    lines = -(-len(profiled) // columns)
    figure, axes = plt.subplots(lines, columns, figsize=(5.2 * columns, 4.0 * lines), squeeze=False)
    for axis in axes.flat[len(profiled) :]:
        axis.set_visible(False)
    for axis, (run, decision) in zip(axes.flat, profiled, strict=False):
        _profile_panel(axis, run, decision)
    _save(plt, figure, path)
    return True


def _profile_panel(axis: Any, run: RunInfo, decision: dict[str, Any]) -> None:
    measured = [m for m in decision["measurements"] if isinstance(m, dict)]
    sizes = [number(m.get("batch_size")) for m in measured]
    epochs = [number(m.get("epoch_time_s")) for m in measured]
    iters = [number(m.get("t_iter_s")) for m in measured]
    points = [(b, e, t) for b, e, t in zip(sizes, epochs, iters, strict=True) if b is not None]
    axis.plot([p[0] for p in points], [p[1] for p in points], "o", label="T(b) measured")
    axis.plot([p[0] for p in points], [p[2] for p in points], "s", label="t_iter(b) measured")
    fit = decision.get("fit")
    low = min((p[0] for p in points), default=1.0)
    top = number(decision.get("max_batch_size")) or max((p[0] for p in points), default=low)
    samples = number(decision.get("epoch_samples"))
    high = max(low, min(top, samples) if samples else top)
    if isinstance(fit, dict) and number(fit.get("a")) and number(fit.get("alpha")) is not None:
        a, alpha = float(fit["a"]), float(fit["alpha"])
        grid = [low * (high / low) ** (i / 40) for i in range(41)] if high > low else [low]
        axis.plot(grid, [a * b**-alpha for b in grid], "--", label=f"fit {a:.3g}·b^-{alpha:.2f}")
    chosen = number(decision.get("chosen"))
    if chosen is not None:
        axis.axvline(chosen, color="black", linewidth=1, linestyle=":", label=f"chosen {chosen:g}")
    if low > 0:
        axis.set_xscale("log", base=2)
    ticks = sorted({int(p[0]) for p in points} | ({int(chosen)} if chosen else set()))
    axis.set_xticks(ticks)
    axis.set_xticklabels([str(t) for t in ticks])
    axis.minorticks_off()
    axis.set_xlabel("batch size")
    axis.set_ylabel("seconds")
    axis.set_title(f"{run.name}: batch size profile", fontsize=9)
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=7)


@dataclass(frozen=True)
class Plot:
    file: str
    title: str
    caption: str
    draw: Callable[[Any, Sequence[RunInfo], Path], bool]


PLOTS: tuple[Plot, ...] = (
    Plot(
        "accuracy_vs_time.png",
        "Accuracy against training time",
        "Test accuracy against training wall time; circled points, joined by the dashed line, "
        "are the Pareto front (no other run is both faster and more accurate).",
        accuracy_vs_time,
    ),
    Plot(
        "accuracy_vs_batch_size.png",
        "Accuracy against batch size",
        "Test accuracy against the batch size each run trained at, one line per strategy (the "
        "paper's quality curve); the dotted line is the start context's accuracy.",
        accuracy_vs_batch_size,
    ),
    Plot(
        "context_size.png",
        "Playbook size against batch size",
        "Playbook updates applied (the sum of ops_applied over every iteration) and the final "
        "playbook's tokens against batch size, per strategy (the paper's Figure 2).",
        context_size,
    ),
    Plot(
        "timeline.png",
        "Iteration timeline",
        "Each bar is one training iteration, as long as its wall time; its label counts the "
        "reduce calls at each level (curate calls, then merge calls).",
        timeline,
    ),
    Plot(
        "llm_usage.png",
        "LLM calls and cost per role",
        "LLM calls per role, and cost per role (tokens per role when no price was set).",
        llm_usage,
    ),
    Plot(
        "batch_profile.png",
        "Batch size profile",
        "What the batch size controller measured at each profiled size, the fitted epoch time "
        "T(b) = A·b^-alpha, and the size it chose.",
        batch_profiles,
    ),
)
