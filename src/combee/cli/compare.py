"""``combee compare``: a grid of strategies × batch sizes × seeds, from flags or a TOML spec;
each cell a run directory under --out, then the report. Parses, calls
:func:`combee.report.compare_async`, prints."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from combee.cli import options as opt
from combee.cli.app import DEFAULT_MODEL, app, err, fail, run
from combee.cli.flags import cli_message
from combee.cli.progress import ConsoleProgress
from combee.cli.report import guarded, print_report
from combee.core.controller import DEFAULT_MAX_BATCH_SIZE, DEFAULT_TAU
from combee.errors import CombeeError
from combee.llm.connect import Endpoint
from combee.report import Cell, CellResult, CompareObserver, CompareResult, compare_async
from combee.report.spec import GridSpec, load_spec

TRAIN_FLAGS = {
    "method": "method",
    "epochs": "epochs",
    "train_limit": "train_limit",
    "val_limit": "val_limit",
    "test_limit": "test_limit",
    "val_every": "val_every",
    "duplication": "duplication",
    "fan_in": "fan_in",
    "max_batch_size": "max_batch_size",
    "tau": "tau",
    "token_budget": "token_budget",
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "max_metric_calls": "max_metric_calls",
    "data": "data",
    "scorer": "scorer",
    "initial_playbook": "initial_context",
    "baseline": "baseline",
}
"""Flags that set a ``combee.train`` keyword (flag parameter -> keyword)."""
ENDPOINT_FLAGS = {
    "model": "model",
    "base_url": "base_url",
    "api_key_env": "api_key_env",
    "json_mode": "json_mode",
    "client": "client",
    "concurrency": "concurrency",
    "timeout": "timeout_s",
    "max_retries": "max_retries",
}
"""Flags that set an :class:`Endpoint` field (flag parameter -> field)."""


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _sizes(text: str) -> list[int | str]:
    return [int(p) if p.lstrip("-").isdigit() else p for p in _csv(text)]


def _seeds(text: str) -> list[int | str]:
    return [int(p) if p.lstrip("-").isdigit() else p for p in _csv(text)]


def merged(ctx: typer.Context, flags: dict[str, Any], spec: GridSpec | None) -> dict[str, Any]:
    """The grid's settings: a flag given on the command line wins over the spec, the spec over
    the flag's default (or its environment variable)."""

    def given(name: str) -> bool:
        source = ctx.get_parameter_source(name)
        return source is not None and source.name == "COMMANDLINE"

    spec = spec or GridSpec(path=Path())
    grid_values: dict[str, Any] = {
        "task": spec.task,
        "strategies": spec.strategies,
        "batch_sizes": spec.batch_sizes,
        "seeds": spec.seeds,
        "out": spec.out,
    }
    parsers = {"strategies": _csv, "batch_sizes": _sizes, "seeds": _seeds}
    settings: dict[str, Any] = {}
    for name, value in grid_values.items():
        if given(name) or value is None:
            parse = parsers.get(name)
            settings[name] = parse(flags[name]) if parse is not None else flags[name]
        else:
            settings[name] = value
    train = dict(spec.settings)
    for name, keyword in TRAIN_FLAGS.items():
        if given(name) or keyword not in train:
            train[keyword] = flags[name]
    if train.get("token_budget") == 0:
        train["token_budget"] = None
    endpoint = dict(spec.endpoint)
    for name, field_name in ENDPOINT_FLAGS.items():
        if given(name) or field_name not in endpoint:
            endpoint[field_name] = flags[name]
    if given("price_prompt") or given("price_completion") or "prices" not in endpoint:
        prompt, completion = flags["price_prompt"], flags["price_completion"]
        given_price = prompt is not None or completion is not None
        endpoint["prices"] = (prompt or 0.0, completion or 0.0) if given_price else None
    return {**settings, "train": train, "endpoint": endpoint}


class CellProgress(CompareObserver):
    """One line per cell on stderr, and the usual live progress while a cell trains."""

    def __init__(self, console: Console, inner: ConsoleProgress) -> None:
        self.console = console
        self.inner = inner

    def on_cell_start(self, cell: Cell, index: int, total: int) -> None:
        self.console.print(
            f"[bold][{index}/{total}] {cell.name}[/]: training (strategy {cell.strategy}, "
            f"batch size {cell.batch_size}, seed {cell.seed})",
            highlight=False,
        )

    def on_cell_end(self, result: CellResult, index: int, total: int) -> None:
        self.inner.close()
        self.console.print(
            f"[{index}/{total}] {cell_line(result)}", highlight=False, markup=False, soft_wrap=True
        )


def cell_line(result: CellResult) -> str:
    name = result.cell.name
    if result.status == "failed":
        error = result.exception
        message = cli_message(error) if isinstance(error, CombeeError) else result.error
        return f"{name}: failed: {message}"
    summary = result.summary or {}
    figures = ", ".join(
        f"{key}={summary[key]}" for key in ("test_accuracy", "train_seconds") if key in summary
    )
    if result.status == "skipped":
        note = f"; {result.note}" if result.note else ""
        return f"{name}: skipped (already finished: {figures or 'final_results.json exists'}){note}"
    return f"{name}: finished in {result.seconds:.1f}s ({figures})"


@app.command("compare")
def compare_command(
    ctx: typer.Context,
    spec: Annotated[
        Path | None,
        typer.Option(
            help="TOML grid: strategies, batch_sizes, seeds, task, out, an endpoint table, any "
            "combee.train setting. Flags given here win over it."
        ),
    ] = None,
    strategies: Annotated[str, typer.Option(help="Comma-separated strategies.")] = "naive,combee",
    batch_sizes: Annotated[
        str, typer.Option(help="Comma-separated batch sizes (numbers or auto).")
    ] = "4,8",
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds.")] = "0",
    task: opt.Task = "formula",
    method: Annotated[str, typer.Option(help="ace (playbook) | gepa (system prompt).")] = "ace",
    epochs: Annotated[int, typer.Option()] = 1,
    train_limit: Annotated[int | None, typer.Option(help="First N training samples.")] = None,
    val_limit: Annotated[int | None, typer.Option(help="First N validation samples.")] = None,
    test_limit: Annotated[int | None, typer.Option(help="First N test samples.")] = None,
    val_every: Annotated[int, typer.Option(help="Validate every N iterations (0: per epoch).")] = 0,
    duplication: Annotated[int, typer.Option(help="Copies p of each reflection (combee).")] = 2,
    fan_in: Annotated[int, typer.Option(help="Most updates one merge call sees.")] = 32,
    max_batch_size: Annotated[
        int, typer.Option(help="auto: the largest batch size it may choose.")
    ] = DEFAULT_MAX_BATCH_SIZE,
    tau: Annotated[float, typer.Option(help="auto: the marginal epoch-time gain.")] = DEFAULT_TAU,
    token_budget: Annotated[int, typer.Option(help="Playbook token cap (0: none).")] = 8000,
    temperature: Annotated[float, typer.Option()] = 0.0,
    max_tokens: Annotated[int, typer.Option(help="Completion tokens per call.")] = 2048,
    max_metric_calls: Annotated[int, typer.Option(help="gepa: budget of rollouts.")] = 200,
    data: opt.Data = None,
    scorer: opt.Scorer = "exact",
    initial_playbook: Annotated[
        Path | None, typer.Option(help="Start every cell from this playbook (gepa: prompt).")
    ] = None,
    baseline: Annotated[bool, typer.Option(help="Also score the start context on test.")] = False,
    model: opt.Model = DEFAULT_MODEL,
    base_url: opt.BaseUrl = None,
    api_key_env: opt.ApiKeyEnv = "OPENAI_API_KEY",
    json_mode: opt.JsonMode = "json_schema",
    client: opt.Client = "openai",
    concurrency: opt.Concurrency = None,
    timeout: opt.Timeout = 120.0,
    max_retries: opt.MaxRetries = 4,
    price_prompt: Annotated[float | None, typer.Option(help="USD per 1M prompt tokens.")] = None,
    price_completion: Annotated[
        float | None, typer.Option(help="USD per 1M completion tokens.")
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="No response cache (default: one per cell).")
    ] = False,
    out: Annotated[Path, typer.Option(help="One run directory per cell in here.")] = Path(
        "runs/compare"
    ),
    report: Annotated[bool, typer.Option(help="Write the report when the grid is done.")] = True,
    title: Annotated[str | None, typer.Option(help="The report's title.")] = None,
) -> None:
    """Train strategies × batch sizes × seeds, one run per cell, then write the report."""
    flags = {k: v for k, v in locals().items() if k not in ("ctx", "spec")}
    grid_spec = guarded(lambda: load_spec(spec)) if spec is not None else None
    settings = merged(ctx, flags, grid_spec)
    endpoint: dict[str, Any] = settings["endpoint"]
    progress = ConsoleProgress(err)

    def llm_for(cell: Cell, run_dir: Path) -> Endpoint:
        cache = None if no_cache else run_dir / "cache.sqlite"
        return Endpoint(**endpoint, cache=cache, seed=cell.seed)

    async def grid() -> CompareResult:
        Endpoint(**endpoint)  # a bad endpoint setting stops the grid before any cell
        try:
            return await compare_async(
                settings["task"], strategies=settings["strategies"],
                batch_sizes=settings["batch_sizes"], seeds=settings["seeds"],
                out=settings["out"], llm=llm_for, report=report, title=title,
                progress=CellProgress(err, progress), observers=[progress], **settings["train"],
            )  # fmt: skip
        finally:
            progress.close()

    result = run(grid())
    console = Console()
    for cell in result.cells:
        console.print(cell_line(cell), highlight=False, markup=False, soft_wrap=True)
    counts = {status: len(result.with_status(status)) for status in ("finished", "skipped")}
    console.print(
        f"cells: {counts['finished']} trained, {counts['skipped']} skipped, "
        f"{len(result.failed)} failed; run directories in {result.out}",
        highlight=False,
        soft_wrap=True,
    )
    if result.report is not None:
        print_report(result.report, console)
    if result.failed:
        names = ", ".join(c.cell.name for c in result.failed)
        raise fail(f"{len(result.failed)} of {len(result.cells)} cells failed: {names}")
