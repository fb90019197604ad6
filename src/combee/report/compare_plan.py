"""A grid's plan: each cell's calls by role, as :func:`combee.plan` counts a run, and the sum over
the cells that would train; counted without connecting to the model or making any call."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from combee.core.call_counts import CallRange, total
from combee.engine.plan import RunPlan, plan, spend_text
from combee.engine.resolve import LLMArg
from combee.report.compare import Cell, LLMFactory, cell_llm, check_cell_settings, grid
from combee.runs import RESULTS_FILE
from combee.tasks.base import Task

_NOT_PLANNED = ("initial_context", "record", "executor")
"""``combee.train`` keywords that change no count of calls."""


@dataclass(frozen=True)
class GridPlan:
    """The plan of every cell of a grid; a cell finished before is skipped, so not counted."""

    cells: tuple[tuple[Cell, RunPlan], ...]
    skipped: tuple[Cell, ...] = ()

    @property
    def calls(self) -> dict[str, CallRange]:
        """Calls by role over every cell that would train."""
        found: dict[str, CallRange] = {}
        for _, cell_plan in self.cells:
            total(cell_plan.calls, found)
        return found

    def lines(self) -> list[str]:
        """The plan in words: a line per cell, then the grid's calls by role and tokens."""
        lines = [
            f"plan: {cell.name}: {_sizes(cell_plan)}; calls {cell_plan.calls_text()}"
            for cell, cell_plan in self.cells
        ]
        lines.extend(f"plan: {cell.name}: finished before, skipped" for cell in self.skipped)
        roles = ", ".join(f"{role} {calls}" for role, calls in self.calls.items())
        lines.append(f"plan: the grid, {len(self.cells)} cells: calls {roles or 'none counted'}")
        if self.cells:
            tokens = sum(p.completion_tokens for _, p in self.cells)
            first = self.cells[0][1]
            lines.append(f"plan: {spend_text(tokens, first.max_tokens, first.prices)}")
        return lines


def _sizes(cell_plan: RunPlan) -> str:
    samples = ", ".join(f"{cell_plan.samples[s]:,} {s}" for s in ("train", "val", "test"))
    count = cell_plan.iterations
    if count is None:
        return samples
    return f"{samples}; {count} iteration{'' if count.most == 1 else 's'}"


def compare_plan(
    task: str | Task = "formula",
    *,
    strategies: Sequence[str] = ("naive", "combee"),
    batch_sizes: Sequence[int | str] = (4, 8),
    seeds: Sequence[int] = (0,),
    out: str | Path = "runs/compare",
    llm: LLMArg | LLMFactory = None,
    overwrite: bool = False,
    **settings: Any,
) -> GridPlan:
    """The plan of :func:`combee.report.compare` with these arguments (see it for them): each
    cell's calls by role, counted as :func:`combee.plan` counts a run, with the settings checked
    as the grid checks them; a cell ``out`` holds finished is skipped unless ``overwrite``."""
    cells = grid(strategies, batch_sizes, seeds)
    check_cell_settings(settings)
    given = {k: v for k, v in settings.items() if k not in _NOT_PLANNED}
    root = Path(out)
    planned: list[tuple[Cell, RunPlan]] = []
    skipped: list[Cell] = []
    for cell in cells:
        run_dir = root / cell.name
        if (run_dir / RESULTS_FILE).exists() and not overwrite:
            skipped.append(cell)
            continue
        cell_plan = plan(
            task,
            strategy=cell.strategy,
            batch_size=cell.batch_size,
            seed=cell.seed,
            llm=cell_llm(llm, cell, run_dir),
            **given,
        )
        planned.append((cell, cell_plan))
    return GridPlan(tuple(planned), tuple(skipped))
