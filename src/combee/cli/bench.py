"""``combee bench``: the speed benchmark against a simulated server."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from combee.cli.app import app, fail, stdout_console
from combee.cli.flags import cli_message
from combee.core.controller import DEFAULT_MAX_BATCH_SIZE, DEFAULT_TAU
from combee.errors import CombeeError


@app.command("bench")
def bench_command(
    preset: Annotated[
        str | None,
        typer.Option(help="speed | saturated | faults | all (see docs/benchmarks.md)."),
    ] = None,
    configs: Annotated[
        str | None,
        typer.Option(help="Comma list of STRATEGY[:SIZE|:auto][@CLIENT], e.g. combee:64@lean."),
    ] = None,
    client: Annotated[str, typer.Option(help="Default client: lean | openai.")] = "lean",
    train_limit: Annotated[int, typer.Option(help="Formula training samples.")] = 500,
    epochs: Annotated[int, typer.Option()] = 1,
    seed: Annotated[int, typer.Option()] = 0,
    concurrency: Annotated[
        int | None,
        typer.Option(help="Client limit on calls in flight (default: follows the batch)."),
    ] = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds per call attempt.")] = None,
    max_retries: Annotated[int | None, typer.Option(help="Retries per call.")] = None,
    tau: Annotated[float, typer.Option(help="auto: see combee train --tau.")] = DEFAULT_TAU,
    max_batch_size: Annotated[
        int, typer.Option(help="auto: the largest batch size it may choose.")
    ] = DEFAULT_MAX_BATCH_SIZE,
    dedup: Annotated[
        bool | None,
        typer.Option(
            "--dedup/--no-dedup",
            help="Near-duplicate folding (default: as combee train, on when embed is installed).",
        ),
    ] = None,
    redact: Annotated[
        bool,
        typer.Option(
            "--redact/--no-redact", help="Redact secrets in prompts and replies (as combee train)."
        ),
    ] = True,
    screen: Annotated[
        bool,
        typer.Option(
            "--screen/--no-screen", help="Screen lessons for planted text (as combee train)."
        ),
    ] = True,
    ttft: Annotated[float | None, typer.Option(help="Server: seconds to first token.")] = None,
    decode_tps: Annotated[float | None, typer.Option(help="Server: decode tokens/s.")] = None,
    prompt_tps: Annotated[float | None, typer.Option(help="Server: prompt tokens/s.")] = None,
    capacity: Annotated[int | None, typer.Option(help="Server: calls served at once.")] = None,
    jitter: Annotated[float | None, typer.Option(help="Server: relative jitter.")] = None,
    straggler_rate: Annotated[float | None, typer.Option(help="Server.")] = None,
    straggler_factor: Annotated[float | None, typer.Option(help="Server.")] = None,
    rate_429: Annotated[float | None, typer.Option(help="Server.")] = None,
    retry_after: Annotated[float | None, typer.Option(help="Server.")] = None,
    rate_500: Annotated[float | None, typer.Option(help="Server.")] = None,
    rate_hang: Annotated[float | None, typer.Option(help="Server.")] = None,
    rate_bad_body: Annotated[float | None, typer.Option(help="Server.")] = None,
    out: Annotated[Path, typer.Option(help="Where the JSON and PNG go.")] = Path("runs/bench"),
) -> None:
    """Measure training speed against a simulated server (takes minutes).

    Trains sequential, naive and combee (fixed and auto batch sizes) on Formula against
    `combee sim-server` in its own process and reports wall time, speedup, calls, client CPU,
    idle fraction and retries. Needs the sim extra: pip install 'combee\\[sim]'.
    """
    from combee.bench.suite import BenchOptions, run_bench

    options = BenchOptions(
        preset=preset,
        configs=configs,
        client=client,
        train_limit=train_limit,
        epochs=epochs,
        seed=seed,
        concurrency=concurrency,
        timeout_s=timeout,
        max_retries=max_retries,
        tau=tau,
        max_batch_size=max_batch_size,
        dedup=dedup,
        redact=redact,
        screen=screen,
        server={
            "ttft_s": ttft,
            "decode_tokens_per_s": decode_tps,
            "prompt_tokens_per_s": prompt_tps,
            "capacity": capacity,
            "jitter": jitter,
            "straggler_rate": straggler_rate,
            "straggler_factor": straggler_factor,
            "rate_429": rate_429,
            "retry_after_s": retry_after,
            "rate_500": rate_500,
            "rate_hang": rate_hang,
            "rate_bad_body": rate_bad_body,
        },
        out=out,
    )
    try:
        run_bench(options, stdout_console())
    except CombeeError as error:
        raise fail(cli_message(error)) from None
