"""``compare``: a grid of strategies × batch sizes × seeds, one normal run directory per cell,
then the report over all of them.

Cells run one after another (cells sharing an endpoint at once would distort each other's wall
times). A cell whose ``final_results.json`` exists is skipped, so a rerun picks up where the last
one stopped; a finished cell run with other settings than the grid's is refused before any cell
trains, unless ``overwrite`` (which trains every cell again); a cell that fails is reported and
the others go on. A strategy that never batches
(``sequential``) is one cell per seed, at batch size 1, whatever the batch sizes.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from combee.api import train_async
from combee.core.loop_observer import LoopObserver
from combee.engine.resolve import LLMArg
from combee.errors import OVERWRITE, CombeeError, ConfigError
from combee.llm.connect import Endpoint
from combee.llm.types import ChatModel
from combee.report.build import ReportFiles, write_report
from combee.report.finished_cells import differences, endpoint_config, grid_config
from combee.report.runs_index import is_run_dir
from combee.report.spec import RESERVED, train_settings
from combee.runs import RESULTS_FILE, read_config
from combee.strategies.registry import STRATEGIES
from combee.sync import run_sync
from combee.tasks.base import Task

log = logging.getLogger(__name__)
T = TypeVar("T")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Cell:
    """One point of the grid; ``name`` is its run directory's name under ``out``."""

    strategy: str
    batch_size: int | str
    seed: int

    @property
    def name(self) -> str:
        return _UNSAFE.sub("_", f"{self.strategy}-b{self.batch_size}-s{self.seed}")


Status = Literal["finished", "skipped", "failed"]


@dataclass
class CellResult:
    """``finished`` (trained now), ``skipped`` (finished before) or ``failed`` (``error`` says
    why). ``summary`` is the cell's ``final_results.json`` when there is one."""

    cell: Cell
    run_dir: Path
    status: Status
    summary: dict[str, Any] | None = None
    error: str | None = None
    seconds: float = 0.0
    exception: Exception | None = field(default=None, repr=False, compare=False)


@dataclass
class CompareResult:
    out: Path
    cells: list[CellResult] = field(default_factory=list)
    report: ReportFiles | None = None

    def with_status(self, status: Status) -> list[CellResult]:
        return [c for c in self.cells if c.status == status]

    @property
    def failed(self) -> list[CellResult]:
        return self.with_status("failed")


class CompareObserver:
    """Hooks for progress; every method does nothing unless overridden."""

    def on_cell_start(self, cell: Cell, index: int, total: int) -> None:
        """Before cell ``index`` (1-based) of ``total`` trains (not called for skipped cells)."""

    def on_cell_end(self, result: CellResult, index: int, total: int) -> None:
        """After a cell finished, was skipped or failed."""


LLMFactory = Callable[[Cell, Path], LLMArg]
ObserversFactory = Callable[[Cell, Path], Sequence[LoopObserver]]


def grid(
    strategies: Sequence[str], batch_sizes: Sequence[int | str], seeds: Sequence[int]
) -> list[Cell]:
    """Every cell, strategies outermost, seeds innermost; checked for kinds and repeats."""
    for setting, values in (
        ("strategies", strategies),
        ("batch_sizes", batch_sizes),
        ("seeds", seeds),
    ):
        if isinstance(values, str) or not values:
            raise ConfigError(f"must be a non-empty list (got {values!r})", setting=setting)
        if len(set(values)) < len(values):
            raise ConfigError(f"names a value twice ({list(values)!r})", setting=setting)
    if any(not isinstance(s, str) or not s for s in strategies):
        raise ConfigError(
            f"must be strategy names (got {list(strategies)!r})", setting="strategies"
        )
    for size in batch_sizes:
        if isinstance(size, str) and size.strip().lower() != "auto":
            raise ConfigError(
                f"holds {size!r}: give whole numbers or 'auto'", setting="batch_sizes"
            )
        if isinstance(size, bool) or not isinstance(size, int | str):
            raise ConfigError(
                f"holds {size!r}: give whole numbers or 'auto'", setting="batch_sizes"
            )
    if any(isinstance(s, bool) or not isinstance(s, int) for s in seeds):
        raise ConfigError(f"must be whole numbers (got {list(seeds)!r})", setting="seeds")
    cells = [
        Cell(s, size, seed)
        for s in strategies
        for size in ([1] if _never_batches(s) else batch_sizes)
        for seed in seeds
    ]
    names = [cell.name for cell in cells]
    if len(set(names)) < len(names):
        raise ConfigError("give two cells the same directory name", setting="strategies")
    return cells


def _never_batches(strategy: str) -> bool:
    """A strategy that runs every batch size as 1 (``sequential``): one cell is enough."""
    try:
        return STRATEGIES.create(strategy).batch_size(2) == 1
    except CombeeError:
        return False  # an unknown name fails in its cell, with the others run


async def compare_async(
    task: str | Task = "formula",
    *,
    strategies: Sequence[str] = ("naive", "combee"),
    batch_sizes: Sequence[int | str] = (4, 8),
    seeds: Sequence[int] = (0,),
    out: str | os.PathLike[str] = "runs/compare",
    llm: LLMArg | LLMFactory = None,
    report: bool = True,
    title: str | None = None,
    overwrite: bool = False,
    progress: CompareObserver | bool | None = None,
    observers: Sequence[LoopObserver] | ObserversFactory = (),
    **settings: Any,
) -> CompareResult:
    """Train every cell of strategies × batch sizes × seeds into ``out/<strategy>-b<size>-s<seed>``
    with :func:`combee.train_async`, then (``report``) write the report over them into ``out``.

    ``settings`` are any other :func:`combee.train` keywords, the same for every cell. ``llm``
    is what ``train`` takes (an :class:`~combee.llm.Endpoint` gets each cell's seed), or a
    function of ``(cell, run_dir)`` returning one (a response cache per cell, say; it is called
    for finished cells too, to compare their endpoint). Finished cells are skipped; one that was
    run with other settings (the task, method, a run setting, the start context, the endpoint's
    model or address) is a ConfigError naming each difference, before any cell trains, unless
    ``overwrite``: then every cell trains again. A cell that fails is recorded and the rest go
    on. ``observers`` watch each cell's training loop: the same ones for every cell, or a
    function of ``(cell, run_dir)`` returning a cell's own (an MLflow tracker per cell, say).
    ``progress``: each cell's training progress, as :func:`combee.train` takes it (None: shown
    where a person is watching), or a :class:`CompareObserver` told as each cell starts and
    ends (then the cells show no progress of their own: give ``observers`` for that).
    """
    cells = grid(strategies, batch_sizes, seeds)
    check_cell_settings(settings)
    root = Path(out)
    if not overwrite:
        _refuse_other_settings(cells, root, task, llm, settings)
    result = CompareResult(out=root)
    watcher = progress if isinstance(progress, CompareObserver) else CompareObserver()
    shown = progress if isinstance(progress, bool | None) else False
    each = {**settings, "progress": shown}
    for index, cell in enumerate(cells, start=1):
        run_dir = root / cell.name
        if (run_dir / RESULTS_FILE).exists() and not overwrite:
            done = CellResult(cell, run_dir, "skipped", summary=_summary(run_dir))
        else:
            watcher.on_cell_start(cell, index, len(cells))
            done = await _train_cell(task, cell, run_dir, llm, observers, each)
        result.cells.append(done)
        watcher.on_cell_end(done, index, len(cells))
    if report:
        written = [c.run_dir for c in result.cells if is_run_dir(c.run_dir)]
        if written:
            result.report = write_report(written, root, title=title or _title(task, cells))
    return result


def check_cell_settings(settings: Mapping[str, Any]) -> None:
    """A ConfigError for a keyword that is set per cell or is not a ``combee.train`` one."""
    allowed = train_settings() | {"record", "executor"}
    for key in settings:
        if key in RESERVED:
            raise ConfigError(f"is set per cell: give {RESERVED[key]} instead", setting=key)
        if key not in allowed:
            raise ConfigError("is not a combee.train setting", setting=key)


async def _train_cell(
    task: str | Task,
    cell: Cell,
    run_dir: Path,
    llm: LLMArg | LLMFactory,
    observers: Sequence[LoopObserver] | ObserversFactory,
    settings: dict[str, Any],
) -> CellResult:
    started = time.perf_counter()
    the_llm = cell_llm(llm, cell, run_dir)
    record = {**settings.get("record", {}), "compare_cell": cell.name}
    try:
        trained = await train_async(
            task,
            strategy=cell.strategy,
            batch_size=cell.batch_size,
            seed=cell.seed,
            llm=the_llm,
            run_dir=run_dir,
            # A cell that stopped part way starts afresh (its response cache, if any, stays).
            overwrite=is_run_dir(run_dir),
            observers=observers(cell, run_dir) if callable(observers) else observers,
            **{**settings, "record": record},
        )
    except CombeeError as error:
        return _failed(cell, run_dir, str(error), error, started)
    except Exception as error:  # one cell's bug must not cost the other cells
        log.debug("cell %s failed", cell.name, exc_info=True)
        return _failed(cell, run_dir, f"{type(error).__name__}: {error}", error, started)
    return CellResult(cell, run_dir, "finished", summary=trained.summary, seconds=_since(started))


def cell_llm(llm: LLMArg | LLMFactory, cell: Cell, run_dir: Path) -> LLMArg:
    """The ``llm`` a cell trains with: the factory's for it, an endpoint with the cell's seed."""
    the_llm = llm(cell, run_dir) if callable(llm) and not isinstance(llm, ChatModel) else llm
    if isinstance(the_llm, Endpoint):
        the_llm = dataclasses.replace(the_llm, seed=cell.seed)
    return the_llm


def _refuse_other_settings(
    cells: Sequence[Cell],
    root: Path,
    task: str | Task,
    llm: LLMArg | LLMFactory,
    settings: dict[str, Any],
) -> None:
    """A ConfigError naming each finished cell whose config.json records other settings than
    this grid's, and how they differ (a cell whose config.json does not read is not judged)."""
    wanted = grid_config(task, settings)
    found: dict[str, list[str]] = {}  # the differences -> the cells that have them
    for cell in cells:
        run_dir = root / cell.name
        if not (run_dir / RESULTS_FILE).exists():
            continue
        try:
            config = read_config(run_dir)
        except ConfigError:
            continue
        endpoint = endpoint_config(cell_llm(llm, cell, run_dir))
        differ = differences(config, {**wanted, **endpoint})
        if differ:
            found.setdefault("; ".join(differ), []).append(cell.name)
    if not found:
        return
    listed = " | ".join(f"{', '.join(names)}: {differ}" for differ, names in found.items())
    raise ConfigError(
        f"({root}) holds cells finished with other settings than this grid's ({listed}): "
        f"pass {OVERWRITE} to train every cell again with these settings, or choose another "
        "out",
        setting="out",
    )


def _failed(
    cell: Cell, run_dir: Path, message: str, error: Exception, started: float
) -> CellResult:
    return CellResult(
        cell, run_dir, "failed", error=message, seconds=_since(started), exception=error
    )


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)


def _summary(run_dir: Path) -> dict[str, Any] | None:
    try:
        value = json.loads((run_dir / RESULTS_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


def _title(task: str | Task, cells: Sequence[Cell]) -> str:
    name = task if isinstance(task, str) else task.name
    return f"Combee comparison: {name}, {len(cells)} cells"


def compare(task: str | Task = "formula", **settings: Any) -> CompareResult:
    """:func:`compare_async` for synchronous callers (see it for the settings)."""
    return run_sync(compare_async(task, **settings), async_name="combee.report.compare_async")


__all__ = [
    "Cell",
    "CellResult",
    "CompareObserver",
    "CompareResult",
    "compare",
    "compare_async",
    "grid",
]
