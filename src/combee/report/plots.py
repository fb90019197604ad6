"""The report's figures (matplotlib, Agg backend). Each draws what the runs hold and returns
the caption of what it drew, or None when no run holds the figures it needs; nothing here fails
on a missing field."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from combee.report.plot_accuracy import accuracy_vs_batch_size, accuracy_vs_time
from combee.report.plot_style import (
    COLORS,
    LineStyle,
    color_of,
    pyplot,
    save,
    shift_percent,
    sizes_axis,
)
from combee.report.plot_timeline import timeline
from combee.report.runs_index import RunInfo, number, role_usage, whole
from combee.report.summary import pareto_front
from combee.report.table import effective_batch_size, updates_applied

__all__ = ["PLOTS", "Plot", "pareto_front", "pyplot"]


def context_size(plt: Any, runs: Sequence[RunInfo], path: Path) -> str | None:
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
        return None
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    sizes = sorted({float(size) for by_size in series.values() for size in by_size})
    names: list[str] = []
    for panel, (axis, label) in enumerate(
        zip(axes, ("playbook updates applied", "playbook tokens"), strict=True)
    ):
        for index, (strategy, by_size) in enumerate(series.items()):
            color = color_of(names, strategy)
            style = LineStyle.of(index, len(series))
            xs, means = [], []
            for size in sorted(by_size):
                values = [v for point in by_size[size] if (v := point[panel]) is not None]
                if not values:
                    continue
                x = size * style.shift
                axis.scatter([x] * len(values), values, color=color, alpha=0.4, s=14)
                xs.append(x)
                means.append(sum(values) / len(values))
            axis.plot(
                xs, means, marker=style.marker, linestyle=style.linestyle,
                markersize=style.size, color=color, label=strategy,
            )  # fmt: skip
        sizes_axis(axis, sizes)
        axis.set_ylabel(label)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(
        "Context size against batch size (mean over seeds; dots: each run)", fontsize=10
    )
    save(plt, figure, path)
    caption = (
        "Playbook updates applied (the sum of ops_applied over every iteration) and the final "
        "playbook's tokens against batch size, per strategy (the paper's Figure 2): lines join "
        "the means over seeds, faint dots are the single runs"
    )
    if len(series) > 1:
        caption += (
            f"; lines differ in marker and line style and are shifted sideways by up to "
            f"±{shift_percent(len(series)):.0f}% so that equal lines stay visible"
        )
    return caption + "."


def llm_usage(plt: Any, runs: Sequence[RunInfo], path: Path) -> str | None:
    """Calls per role and cost per role (tokens per role when no run has a price)."""
    usage = {run.name: role_usage(run) for run in runs}
    usage = {name: roles for name, roles in usage.items() if roles}
    if not usage:
        return None
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
            color = COLORS[i % len(COLORS)]
            axis.barh(names, values, left=left, color=color, label=role)
            left = [a + b for a, b in zip(left, values, strict=True)]
        axis.set_title(f"{title} per role", fontsize=10)
        axis.invert_yaxis()
        axis.tick_params(axis="y", labelsize=8)
        axis.grid(True, axis="x", alpha=0.3)
    axes[1].legend(fontsize=7, loc="lower right")
    save(plt, figure, path)
    return "LLM calls per role, and " + (
        "cost per role." if priced else "tokens per role (no run had a price)."
    )


def batch_profiles(plt: Any, runs: Sequence[RunInfo], path: Path) -> str | None:
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
        return None
    columns = min(3, len(profiled))
    lines = -(-len(profiled) // columns)
    figure, axes = plt.subplots(lines, columns, figsize=(5.2 * columns, 4.0 * lines), squeeze=False)
    for axis in axes.flat[len(profiled) :]:
        axis.set_visible(False)
    for axis, (run, decision) in zip(axes.flat, profiled, strict=False):
        _profile_panel(axis, run, decision)
    save(plt, figure, path)
    return (
        "What the batch size controller measured at each profiled size, the fitted epoch time "
        "T(b) = A·b^-alpha, and the size it chose."
    )


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
    draw: Callable[[Any, Sequence[RunInfo], Path], str | None]
    """Draws into the path and returns the caption of what it drew, or None when no run has
    the figures it needs."""


PLOTS: tuple[Plot, ...] = (
    Plot("accuracy_vs_time.png", "Accuracy against training time", accuracy_vs_time),
    Plot("accuracy_vs_batch_size.png", "Accuracy against batch size", accuracy_vs_batch_size),
    Plot("context_size.png", "Playbook size against batch size", context_size),
    Plot("timeline.png", "Iteration timeline", timeline),
    Plot("llm_usage.png", "LLM calls and cost per role", llm_usage),
    Plot("batch_profile.png", "Batch size profile", batch_profiles),
)
