"""``combee demo``: a short real Combee training on Formula, accuracy before and after."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from combee.cli import options as opt
from combee.cli.app import app, err, run


@app.command("demo")
@opt.with_endpoint_options(concurrency=64, timeout=600.0)
def demo_command(
    train_limit: Annotated[int, typer.Option(help="Training samples.")] = 4,
    batch_size: Annotated[int, typer.Option(help="Samples per iteration.")] = 4,
    test_limit: Annotated[int, typer.Option(help="Test samples, scored before and after.")] = 4,
    train: Annotated[int | None, opt.renamed("--train", "--train-limit")] = None,
    test: Annotated[int | None, opt.renamed("--test", "--test-limit")] = None,
    seed: opt.Seed = 0,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/demo"),
    **options: Any,
) -> None:
    """A short real Combee training on Formula: accuracy before and after, and the playbook."""
    from combee.engine.demo import run_demo
    from combee.progress import ConsoleProgress

    progress = ConsoleProgress(err)

    async def demo() -> list[str]:
        llm = opt.endpoint_of(options, cache=None, seed=seed)
        try:
            return await run_demo(
                llm, train_limit=opt.given(train_limit, train), batch_size=batch_size,
                test_limit=opt.given(test_limit, test), seed=seed, out=out,
                progress=progress,
            )  # fmt: skip
        finally:
            progress.close()

    typer.echo("\n".join(run(demo())))
