"""``combee eval-traces``: next-action accuracy of a trace-learned playbook, offline."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from combee.cli import options as opt
from combee.cli.app import app, err, fail, run, stdout_console
from combee.engine.offline_eval import (
    TRANSCRIPT_TOKENS,
    evaluate_next_actions_async,
    learned_run_settings,
)

if TYPE_CHECKING:
    from combee.engine.offline_eval import NextActionResult, PointResult


@app.command("eval-traces")
@opt.with_endpoint_options()
def eval_traces_command(
    ctx: typer.Context,
    run_dir: Annotated[
        Path | None,
        typer.Option(
            "--run",
            help="A `combee learn` run: its traces, held-out tasks, playbook and endpoint "
            "(endpoint flags given here replace the run's).",
        ),
    ] = None,
    traces: Annotated[
        list[Path] | None, typer.Option("--traces", help="Trace files or folders (repeatable).")
    ] = None,
    playbook: Annotated[Path | None, typer.Option(help="The playbook file to judge.")] = None,
    tasks: Annotated[
        str | None, typer.Option(help="Comma list of task ids (default: the run's held-out).")
    ] = None,
    limit: Annotated[int | None, typer.Option(help="Only the first N tasks.")] = None,
    limit_tasks: Annotated[int | None, opt.renamed("--limit-tasks", "--limit")] = None,
    points: Annotated[
        int, typer.Option("--points", "--points-per-task", help="Decision points per task.")
    ] = 3,
    format: Annotated[str, typer.Option("--format", help="Trace format (auto: detect).")] = "auto",
    transcript_tokens: Annotated[
        int, typer.Option(help="Tokens of trajectory per question; longer ones are cut.")
    ] = TRANSCRIPT_TOKENS,
    max_tokens: Annotated[int, typer.Option(help="Completion tokens per call.")] = 512,
    cache: opt.CachePath = None,
    seed: opt.Seed = 0,
    out: Annotated[
        Path | None, typer.Option(help="Folder for the results (default: RUN/next_action).")
    ] = None,
    **options: Any,
) -> None:
    """Judge a trace-learned playbook without the environment: at decision points of held-out
    traces, the agent model names its next action without and with the playbook."""
    target = out or (run_dir / "next_action" if run_dir is not None else Path("runs/next-action"))

    def progress(result: PointResult, done: int, total: int) -> None:
        def mark(condition: str) -> str:
            right = result.arguments[condition]
            return "right" if right else "tool only" if result.tool[condition] else "wrong"

        marks = f"without: {mark('without_playbook')}, with: {mark('with_playbook')}"
        err.print(f"  point {done}/{total} {result.point}: {marks}", highlight=False)

    async def evaluate() -> NextActionResult:
        settings = _settings(
            run_dir, traces, playbook, tasks, format, opt.given(limit, limit_tasks)
        )
        saved = settings.pop("llm", None)  # the run's endpoint
        if saved is None:
            llm = opt.endpoint_of(options, cache=cache, seed=seed)
        else:
            llm = opt.endpoint_over(ctx, saved, options, cache=cache, seed=seed)
        return await evaluate_next_actions_async(
            llm=llm, points_per_task=points, transcript_tokens=transcript_tokens,
            max_tokens=max_tokens, out=target, on_point=progress, seed=seed, **settings,
        )  # fmt: skip

    result = run(evaluate())
    stdout_console().print(result.markdown(), highlight=False, markup=False)
    stdout_console().print(f"written to {target}", highlight=False, markup=False)


def _settings(
    run_dir: Path | None,
    traces: list[Path] | None,
    playbook: Path | None,
    tasks: str | None,
    format: str,
    limit: int | None,
) -> dict[str, Any]:
    """The evaluation's settings: a learn run's, overridden by the flags given."""
    settings: dict[str, Any] = learned_run_settings(run_dir) if run_dir is not None else {}
    if traces:
        settings["traces"] = [str(t) for t in traces]
    if playbook is not None:
        settings["playbook"] = playbook
    if tasks is not None:
        settings["tasks"] = [t.strip() for t in tasks.split(",") if t.strip()]
    if format != "auto":
        settings["format"] = format
    if not settings.get("traces") or "playbook" not in settings:
        raise fail("give --run RUN_DIR (a `combee learn` run), or --traces and --playbook")
    if limit is not None and settings.get("tasks"):
        settings["tasks"] = settings["tasks"][:limit]
    return settings
