"""``combee``: train, eval and sim-server."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from combee.cli.endpoint import EndpointSettings
from combee.cli.train import EvalOptions, TrainOptions, run_eval, run_train
from combee.core.controller import DEFAULT_MAX_BATCH_SIZE, DEFAULT_TAU
from combee.errors import CombeeError

app = typer.Typer(
    name="combee",
    help="Scale prompt learning: parallel map, augmented shuffle, scan aggregation.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
err = Console(stderr=True)
out = Console()
T = TypeVar("T")

DEFAULT_MODEL = os.environ.get("COMBEE_MODEL", "local")

Model = Annotated[
    str,
    typer.Option(
        help="Model name at the endpoint, or local[:qwen2.5-1.5b|smollm2|PATH.gguf] for the "
        "embedded model. Env: COMBEE_MODEL.",
    ),
]
BaseUrl = Annotated[
    str | None,
    typer.Option(
        envvar="COMBEE_BASE_URL",
        help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (default: OpenAI's).",
    ),
]
ApiKeyEnv = Annotated[
    str, typer.Option(help="Name of the environment variable holding the API key.")
]
JsonModeOpt = Annotated[
    str,
    typer.Option(
        help="How schemas reach the server: json_schema | json_object_schema (llama.cpp) | "
        "json_object | none.",
    ),
]


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command; a user-caused error prints one line and exits 1."""
    try:
        return asyncio.run(coro)
    except CombeeError as error:
        err.print(f"[bold red]error:[/] {error}", highlight=False)
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]: finished iterations are saved in the run directory")
        raise typer.Exit(130) from None


def out_is_terminal() -> bool:
    return out.is_terminal


def _batch_size(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        err.print(f"[bold red]error:[/] --batch-size {value!r}: give a whole number or auto")
        raise typer.Exit(1) from None


@app.command("train")
def train_command(
    task: Annotated[str, typer.Option(help="formula | finer | jsonl (with --data).")] = "formula",
    method: Annotated[str, typer.Option(help="ace (playbook) | gepa (system prompt).")] = "ace",
    strategy: Annotated[
        str, typer.Option(help="sequential | naive | combee (gepa also: auto).")
    ] = "combee",
    batch_size: Annotated[
        str,
        typer.Option(help="Samples per iteration, or auto: profile sizes, pick one (ace)."),
    ] = "40",
    max_batch_size: Annotated[
        int, typer.Option(help="auto: the largest batch size it may choose.")
    ] = DEFAULT_MAX_BATCH_SIZE,
    tau: Annotated[
        float,
        typer.Option(
            help="auto: grow the batch while one more sample still cuts epoch time by this "
            "fraction (alpha/b >= tau)."
        ),
    ] = DEFAULT_TAU,
    reprofile: Annotated[
        bool, typer.Option(help="auto: profile again at the start of every epoch.")
    ] = False,
    epochs: Annotated[int, typer.Option()] = 1,
    model: Model = DEFAULT_MODEL,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    json_mode: JsonModeOpt = "json_schema",
    client: Annotated[
        str,
        typer.Option(help="HTTP client: openai (the SDK) | lean (same wire format, less CPU)."),
    ] = "openai",
    concurrency: Annotated[int, typer.Option(help="Most LLM calls in flight at once.")] = 64,
    timeout: Annotated[float, typer.Option(help="Seconds per LLM call attempt.")] = 120.0,
    max_retries: Annotated[int, typer.Option(help="Retries per call on 429/5xx/timeouts.")] = 4,
    train_limit: Annotated[
        int | None, typer.Option(help="Use the first N training samples.")
    ] = None,
    val_limit: Annotated[
        int | None, typer.Option(help="First N validation samples (0: none).")
    ] = None,
    test_limit: Annotated[int | None, typer.Option(help="First N test samples.")] = None,
    val_every: Annotated[int, typer.Option(help="Validate every N iterations (0: per epoch).")] = 0,
    duplication: Annotated[int, typer.Option(help="Copies p of each reflection (combee).")] = 2,
    fan_in: Annotated[int, typer.Option(help="Most updates one merge call sees.")] = 32,
    token_budget: Annotated[int, typer.Option(help="Playbook token cap (0: none).")] = 8000,
    temperature: Annotated[float, typer.Option()] = 0.0,
    max_tokens: Annotated[int, typer.Option(help="Completion tokens per call.")] = 2048,
    data: Annotated[str | None, typer.Option(help="JSONL file for --task jsonl.")] = None,
    scorer: Annotated[
        str, typer.Option(help="jsonl scorer: exact | numeric | contains.")
    ] = "exact",
    initial_playbook: Annotated[Path | None, typer.Option(help="Start from this playbook.")] = None,
    baseline: Annotated[
        bool, typer.Option(help="Also score the initial playbook on test.")
    ] = False,
    cache: Annotated[
        Path | None, typer.Option(help="SQLite response cache (default: in --out).")
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not cache responses.")] = False,
    price_prompt: Annotated[float | None, typer.Option(help="USD per 1M prompt tokens.")] = None,
    price_completion: Annotated[
        float | None, typer.Option(help="USD per 1M completion tokens.")
    ] = None,
    max_metric_calls: Annotated[
        int, typer.Option(help="gepa: budget of metric calls (rollouts).")
    ] = 200,
    seed: Annotated[int, typer.Option()] = 0,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/latest"),
    overwrite: Annotated[
        bool, typer.Option(help="Reuse an --out that holds a finished run.")
    ] = False,
) -> None:
    """Learn a playbook on a task and evaluate it on the test slice."""
    endpoint = EndpointSettings(
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        json_mode=json_mode,
        concurrency=concurrency,
        timeout_s=timeout,
        max_retries=max_retries,
        cache_path=None if no_cache else (cache or out / "cache.sqlite"),
        price_prompt=price_prompt,
        price_completion=price_completion,
        seed=seed,
        client=client,
    )
    auto_batch = batch_size.strip().lower() == "auto"
    if auto_batch and method != "ace":
        err.print("[bold red]error:[/] --batch-size auto drives the ace training loop only")
        raise typer.Exit(1)
    options = TrainOptions(
        task=task,
        data=data,
        scorer=scorer,
        strategy=strategy,
        batch_size=max_batch_size if auto_batch else _batch_size(batch_size),
        epochs=epochs,
        duplication=duplication,
        fan_in=fan_in,
        train_limit=train_limit,
        val_limit=val_limit,
        test_limit=test_limit,
        val_every=val_every,
        token_budget=token_budget or None,
        temperature=temperature,
        max_tokens=max_tokens,
        initial_playbook=initial_playbook,
        baseline=baseline,
        seed=seed,
        out=out,
        overwrite=overwrite,
        auto_batch=auto_batch,
        max_batch_size=max_batch_size,
        tau=tau,
        reprofile=reprofile,
    )
    if method == "ace":
        results = _run(run_train(options, endpoint, err))
    elif method == "gepa":
        from combee.cli.train_gepa import run_train_gepa

        results = _run(run_train_gepa(options, endpoint, err, max_metric_calls=max_metric_calls))
    else:
        err.print(f"[bold red]error:[/] unknown --method {method!r}: choose ace or gepa")
        raise typer.Exit(1)
    summary = {
        k: results.get(k)
        for k in ("baseline_test_accuracy", "test_accuracy", "train_seconds", "llm_calls")
        if k in results
    }
    out_line = ", ".join(f"{k}={v}" for k, v in summary.items())
    Console().print(f"done: {out_line}\nrun directory: {out}", highlight=False)


@app.command("eval")
def eval_command(
    playbook: Annotated[Path | None, typer.Option(help="Playbook file (default: empty).")] = None,
    task: Annotated[str, typer.Option()] = "formula",
    split: Annotated[str, typer.Option(help="train | val | test.")] = "test",
    limit: Annotated[int | None, typer.Option(help="First N samples.")] = None,
    max_tokens: Annotated[int, typer.Option(help="Completion tokens per call.")] = 2048,
    model: Model = DEFAULT_MODEL,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    json_mode: JsonModeOpt = "json_schema",
    concurrency: Annotated[int, typer.Option()] = 64,
    timeout: Annotated[float, typer.Option()] = 120.0,
    max_retries: Annotated[int, typer.Option()] = 4,
    data: Annotated[str | None, typer.Option()] = None,
    scorer: Annotated[str, typer.Option()] = "exact",
    cache: Annotated[Path | None, typer.Option(help="SQLite response cache.")] = None,
    seed: Annotated[int, typer.Option()] = 0,
    out: Annotated[
        Path | None, typer.Option(help="Write predictions and accuracy as JSON.")
    ] = None,
) -> None:
    """Evaluate a saved playbook on a task split."""
    endpoint = EndpointSettings(
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        json_mode=json_mode,
        concurrency=concurrency,
        timeout_s=timeout,
        max_retries=max_retries,
        cache_path=cache,
        price_prompt=None,
        price_completion=None,
        seed=seed,
    )
    options = EvalOptions(
        playbook=playbook,
        task=task,
        data=data,
        scorer=scorer,
        split=split,
        limit=limit,
        max_tokens=max_tokens,
        seed=seed,
        out=out,
    )
    report = _run(run_eval(options, endpoint, err))
    out_console = Console()
    out_console.print(
        f"accuracy {report['accuracy']:.4f} on {report['samples']} {split} samples "
        f"({report['failed_samples']} failed) in {report['seconds']}s",
        highlight=False,
    )


@app.command("demo")
def demo_command(
    model: Model = DEFAULT_MODEL,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    json_mode: JsonModeOpt = "json_schema",
    train: Annotated[int, typer.Option(help="Training samples.")] = 4,
    batch_size: Annotated[int, typer.Option(help="Samples per iteration.")] = 4,
    test: Annotated[int, typer.Option(help="Test samples, scored before and after.")] = 4,
    seed: Annotated[int, typer.Option()] = 0,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/demo"),
) -> None:
    """A short real Combee training on Formula: accuracy before and after, and the playbook."""
    from combee.cli.demo import run_demo

    endpoint = EndpointSettings(
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        json_mode=json_mode,
        concurrency=64,
        timeout_s=600.0,
        max_retries=4,
        cache_path=None,
        price_prompt=None,
        price_completion=None,
        seed=seed,
    )
    lines = _run(
        run_demo(endpoint, err, train=train, batch_size=batch_size, test=test, seed=seed, out=out)
    )
    typer.echo("\n".join(lines))


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
    concurrency: Annotated[int, typer.Option(help="Client limit on calls in flight.")] = 1024,
    timeout: Annotated[float | None, typer.Option(help="Seconds per call attempt.")] = None,
    max_retries: Annotated[int | None, typer.Option(help="Retries per call.")] = None,
    tau: Annotated[float, typer.Option(help="auto: see combee train --tau.")] = DEFAULT_TAU,
    max_batch_size: Annotated[
        int, typer.Option(help="auto: the largest batch size it may choose.")
    ] = DEFAULT_MAX_BATCH_SIZE,
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
    idle fraction and retries.
    """
    from combee.cli.bench import BenchOptions, run_bench

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
        run_bench(options, Console(width=None if out_is_terminal() else 200))
    except CombeeError as error:
        err.print(f"[bold red]error:[/] {error}", highlight=False)
        raise typer.Exit(1) from None


@app.command("sim-server")
def sim_server_command(
    host: Annotated[str, typer.Option(help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
    script: Annotated[
        str, typer.Option(help="ace (scripted ACE roles) | gepa (scripted GEPA roles) | echo.")
    ] = "ace",
    seed: Annotated[int, typer.Option(help="Seed of every latency and fault draw.")] = 0,
    ttft: Annotated[float, typer.Option(help="Seconds to first token per call.")] = 0.0,
    decode_tps: Annotated[
        float | None, typer.Option(help="Completion tokens per second per call (none: instant).")
    ] = None,
    prompt_tps: Annotated[
        float | None, typer.Option(help="Prompt tokens read per second per call (none: instant).")
    ] = None,
    capacity: Annotated[
        int | None,
        typer.Option(help="Calls served at once, like a vLLM batch; the rest queue FIFO."),
    ] = None,
    jitter: Annotated[
        float, typer.Option(help="Scale each latency by uniform(1-j, 1+j), 0 <= j < 1.")
    ] = 0.0,
    straggler_rate: Annotated[float, typer.Option(help="Share of calls that straggle.")] = 0.0,
    straggler_factor: Annotated[float, typer.Option(help="How many times slower.")] = 5.0,
    rate_429: Annotated[float, typer.Option(help="Share of calls answered 429.")] = 0.0,
    retry_after: Annotated[float, typer.Option(help="Retry-After seconds sent with 429.")] = 1.0,
    rate_500: Annotated[float, typer.Option(help="Share of calls answered 500.")] = 0.0,
    rate_hang: Annotated[
        float, typer.Option(help="Share of calls that hang (until --hang-s or the client leaves).")
    ] = 0.0,
    hang_s: Annotated[float, typer.Option(help="How long a hanging call hangs.")] = 600.0,
    rate_bad_body: Annotated[
        float, typer.Option(help="Share of calls answered 200 with truncated or non-JSON body.")
    ] = 0.0,
) -> None:
    """Serve a scripted model over the OpenAI chat-completions API.

    Simulated latency and injected faults are set by the flags below, all seeded.
    """
    from combee.sim.server import SimConfig, echo_responder, run_server

    if script == "ace":
        from combee.sim.ace_script import ace_responder as responder
    elif script == "gepa":
        from combee.sim.gepa_script import gepa_responder as responder
    elif script == "echo":
        responder = echo_responder
    else:
        err.print(f"[bold red]error:[/] --script {script!r}: choose ace, gepa or echo")
        raise typer.Exit(1)
    try:
        config = SimConfig(
            seed=seed,
            ttft_s=ttft,
            decode_tokens_per_s=decode_tps,
            prompt_tokens_per_s=prompt_tps,
            capacity=capacity,
            jitter=jitter,
            straggler_rate=straggler_rate,
            straggler_factor=straggler_factor,
            rate_429=rate_429,
            retry_after_s=retry_after,
            rate_500=rate_500,
            rate_hang=rate_hang,
            hang_s=hang_s,
            rate_bad_body=rate_bad_body,
        )
    except CombeeError as error:
        err.print(f"[bold red]error:[/] {error}", highlight=False)
        raise typer.Exit(1) from None
    err.print(f"combee sim-server ({script}) on http://{host}:{port}/v1", highlight=False)
    run_server(responder, config, host=host, port=port)


if __name__ == "__main__":
    app()
