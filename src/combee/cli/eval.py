"""``combee eval``: score a saved playbook (or prompt) on a task split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from combee.cli import options as opt
from combee.cli.app import app, err, fail, run, stdout_console
from combee.cli.setting_options import with_setting_options
from combee.declare import declared
from combee.llm.types import DEFAULT_MAX_TOKENS
from combee.tasks.settings import TaskSettings

_SAMPLE_SIZE = [item for item in declared(TaskSettings) if item.name == "max_sample_chars"]
"""The declared bound on one sample's size, a flag here as on ``combee train``."""

if TYPE_CHECKING:
    from combee.engine.results import EvalResult


@app.command("eval")
@with_setting_options(_SAMPLE_SIZE)
@opt.with_endpoint_options()
def eval_command(
    playbook: Annotated[
        Path | None, typer.Option(help="Playbook file (gepa: prompt file; default: empty).")
    ] = None,
    task: opt.Task = "formula",
    method: Annotated[str, typer.Option(help="ace | gepa | a registered method.")] = "ace",
    split: Annotated[
        str,
        typer.Option(
            help="train | val | test | all (the three together: a whole JSONL file, which "
            "is otherwise split 60/20/20 by --seed)."
        ),
    ] = "test",
    limit: Annotated[int | None, typer.Option(help="First N samples.")] = None,
    max_tokens: Annotated[
        int, typer.Option(help="Completion tokens per call.")
    ] = DEFAULT_MAX_TOKENS,
    data: opt.Data = None,
    scorer: opt.Scorer = "exact",
    cache: opt.CachePath = None,
    seed: opt.Seed = 0,
    out: Annotated[
        Path | None, typer.Option(help="Write predictions and accuracy as JSON.")
    ] = None,
    **options: Any,
) -> None:
    """Evaluate a saved playbook on a task split."""
    from combee.engine.evaluation import evaluate_async
    from combee.progress import ConsoleProgress

    max_sample_chars = options.pop("max_sample_chars")
    progress = ConsoleProgress(err, evaluation_lines=False)  # the result is printed below

    async def evaluate() -> EvalResult:
        llm = opt.endpoint_of(options, cache=cache, seed=seed)
        try:
            return await evaluate_async(
                task, context=playbook, method=method, llm=llm, split=split, limit=limit,
                observers=[progress], data=data, scorer=scorer, seed=seed, max_tokens=max_tokens,
                max_sample_chars=max_sample_chars,
            )  # fmt: skip
        finally:
            progress.close()

    result = run(evaluate())
    report = result.to_dict(predictions=out is not None)
    report["playbook"] = str(playbook) if playbook else None
    if out is not None:
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        except OSError as error:
            raise fail(f"--out {out}: cannot write the report: {error.strerror}") from None
    scored = (
        f"{result.evaluation.samples} samples (all splits)"
        if split == "all"
        else (f"{result.evaluation.samples} {split} samples")
    )
    stdout_console().print(
        f"accuracy {result.accuracy:.4f} on {scored} "
        f"({len(result.evaluation.failures)} failed) in {result.seconds:.3f}s",
        highlight=False,
        markup=False,
    )
    if split != "all" and (task == "jsonl" or task.startswith("jsonl:")):
        err.print(
            f"note: a JSONL file is split 60/20/20 (train/val/test, lines chosen by --seed) and "
            f"this scored its {split} share; --split all scores the whole file",
            highlight=False,
            markup=False,
        )
