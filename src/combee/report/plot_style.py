"""What the report's figures share: matplotlib on the Agg backend, one colour per strategy,
line styles that keep equal lines apart, batch-size axes with the sizes as numbers."""

from __future__ import annotations

import importlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from combee.report.summary import Group

COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


def pyplot() -> Any | None:
    """``matplotlib.pyplot`` on the Agg backend, or None when matplotlib is not installed."""
    try:
        matplotlib = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        return importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return None


def color_of(names: list[str], name: str) -> str:
    """The colour of ``name``: the next one for a name not in ``names`` (then added). Every
    figure meets the strategies in the table's order, so a strategy has one colour throughout."""
    if name not in names:
        names.append(name)
    return COLORS[names.index(name) % len(COLORS)]


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
_LINESTYLES = ("-", "--", "-.", ":")
JITTER_DOUBLINGS = 0.06
"""Lines of a batch-size figure are shifted sideways by this fraction of a doubling apart."""


@dataclass(frozen=True)
class LineStyle:
    """How the ``index``-th of ``count`` lines is drawn so that equal lines stay apart: its own
    marker and line style, a smaller marker than the line before (equal points nest), and a
    sideways shift (a factor on the batch size, centred on 1)."""

    marker: str
    linestyle: str
    size: float
    shift: float

    @classmethod
    def of(cls, index: int, count: int) -> LineStyle:
        return cls(
            MARKERS[index % len(MARKERS)],
            _LINESTYLES[index % len(_LINESTYLES)],
            max(4.0, 9.0 - 1.6 * index),
            math.pow(2.0, JITTER_DOUBLINGS * (index - (count - 1) / 2)),
        )


def shift_percent(count: int) -> float:
    """The largest sideways shift of :class:`LineStyle` among ``count`` lines, in percent."""
    return 100 * (math.pow(2.0, JITTER_DOUBLINGS * (count - 1) / 2) - 1)


def save(plt: Any, figure: Any, path: Path) -> None:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def kind_of(group: Group, with_method: bool) -> str:
    return f"{group.method} {group.strategy}" if with_method else str(group.strategy)


def sizes_axis(axis: Any, sizes: Sequence[float]) -> None:
    """Batch sizes as the numbers they are (4, 16; never 2^2), on a log scale when wide."""
    if len(sizes) > 1 and sizes[-1] / max(1.0, sizes[0]) >= 4:
        axis.set_xscale("log", base=2)
    axis.set_xticks(list(sizes))
    axis.set_xticklabels([f"{s:g}" for s in sizes])
    axis.minorticks_off()
    axis.set_xlabel("batch size")


def accuracy_axes(axis: Any, xlabel: str, title: str) -> None:
    axis.set_xlabel(xlabel)
    axis.set_ylabel("test accuracy")
    axis.set_ylim(-0.03, 1.03)
    axis.set_title(title, fontsize=10)
    axis.grid(True, alpha=0.3)
