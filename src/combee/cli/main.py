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


def _endpoint(
    model: str,
    base_url: str | None,
    api_key_env: str,
    json_mode: str,
    concurrency: int,
    timeout: float,
    max_retries: int,
    cache: Path | None,
    price_prompt: float | None,
    price_completion: float | None,
    seed: int,
) -> EndpointSettings:
    return EndpointSettings(
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        json_mode=json_mode,
        concurrency=concurrency,
        timeout_s=timeout,
        max_retries=max_retries,
        cache_path=cache,
        price_prompt=price_prompt,
        price_completion=price_completion,
        seed=seed,
    )


@app.command("train")
def train_command(
    task: Annotated[str, typer.Option(help="formula | finer | jsonl (with --data).")] = "formula",
    strategy: Annotated[str, typer.Option(help="sequential | naive | combee.")] = "combee",
    batch_size: Annotated[int, typer.Option(help="Samples per iteration.")] = 40,
    epochs: Annotated[int, typer.Option()] = 1,
    model: Model = DEFAULT_MODEL,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = "OPENAI_API_KEY",
    json_mode: JsonModeOpt = "json_schema",
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
    seed: Annotated[int, typer.Option()] = 0,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/latest"),
    overwrite: Annotated[
        bool, typer.Option(help="Reuse an --out that holds a finished run.")
    ] = False,
) -> None:
    """Learn a playbook on a task and evaluate it on the test slice."""
    endpoint = _endpoint(
        model,
        base_url,
        api_key_env,
        json_mode,
        concurrency,
        timeout,
        max_retries,
        None if no_cache else (cache or out / "cache.sqlite"),
        price_prompt,
        price_completion,
        seed,
    )
    options = TrainOptions(
        task=task,
        data=data,
        scorer=scorer,
        strategy=strategy,
        batch_size=batch_size,
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
    )
    results = _run(run_train(options, endpoint, err))
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
    endpoint = _endpoint(
        model,
        base_url,
        api_key_env,
        json_mode,
        concurrency,
        timeout,
        max_retries,
        cache,
        None,
        None,
        seed,
    )
    options = EvalOptions(
        playbook=playbook,
        task=task,
        data=data,
        scorer=scorer,
        split=split,
        limit=limit,
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
    train: Annotated[int, typer.Option(help="Training samples.")] = 6,
    batch_size: Annotated[int, typer.Option(help="Samples per iteration.")] = 6,
    test: Annotated[int, typer.Option(help="Test samples, scored before and after.")] = 6,
    seed: Annotated[int, typer.Option()] = 0,
    out: Annotated[Path, typer.Option(help="Run directory.")] = Path("runs/demo"),
) -> None:
    """A short real Combee training on Formula: accuracy before and after, and the playbook."""
    from combee.cli.demo import run_demo

    endpoint = _endpoint(
        model,
        base_url,
        api_key_env,
        json_mode,
        64,
        600.0,
        4,
        None,
        None,
        None,
        seed,
    )
    lines = _run(
        run_demo(endpoint, err, train=train, batch_size=batch_size, test=test, seed=seed, out=out)
    )
    typer.echo("\n".join(lines))


@app.command("sim-server")
def sim_server_command(
    host: Annotated[str, typer.Option(help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
    script: Annotated[str, typer.Option(help="ace (scripted ACE roles) | echo.")] = "ace",
) -> None:
    """Serve a deterministic scripted model over the OpenAI chat-completions API."""
    from combee.sim.server import SimConfig, echo_responder, run_server

    if script == "ace":
        from combee.sim.ace_script import ace_responder as responder
    elif script == "echo":
        responder = echo_responder
    else:
        err.print(f"[bold red]error:[/] --script {script!r}: choose ace or echo")
        raise typer.Exit(1)
    err.print(f"combee sim-server ({script}) on http://{host}:{port}/v1", highlight=False)
    run_server(responder, SimConfig(), host=host, port=port)


if __name__ == "__main__":
    app()
