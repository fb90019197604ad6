"""Options several commands share, and the endpoint they describe."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from combee.cli.setting_options import in_panel, with_parameters
from combee.errors import ConfigError
from combee.llm.connect import DEFAULT_MODEL, Endpoint
from combee.llm.guards import MAX_FAILURES_IN_A_ROW

F = TypeVar("F", bound=Callable[..., Any])

Model = Annotated[
    str,
    typer.Option(
        envvar="COMBEE_MODEL",
        help="Model name at the endpoint, or local[:qwen2.5-1.5b|smollm2|PATH.gguf] for the "
        "embedded model.",
    ),
]
BaseUrl = Annotated[
    str | None,
    typer.Option(
        envvar="COMBEE_BASE_URL",
        help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1 (default: OPENAI_BASE_URL, "
        "else OpenAI's).",
    ),
]
ApiKeyEnv = Annotated[
    str, typer.Option(help="Name of the environment variable holding the API key.")
]
JsonMode = Annotated[
    str,
    typer.Option(
        help="How schemas reach the server: json_schema | json_object_schema (llama.cpp) | "
        "json_object | none.",
    ),
]
Redact = Annotated[
    bool,
    typer.Option(help="Replace keys, tokens, passwords and e-mail addresses in all LLM traffic."),
]
Screen = Annotated[
    bool,
    typer.Option(help="Keep out lessons that are instructions planted in the data."),
]
Resume = Annotated[
    Path | None,
    typer.Option(help="Continue the unfinished run in this folder with its recorded settings."),
]
MaxFailedShare = Annotated[
    float,
    typer.Option(help="Stop the run when an iteration loses more than this share of samples."),
]
MaxFailuresInARow = Annotated[
    int,
    typer.Option(help="Stop the run when this many LLM calls in a row fail for good (0: never)."),
]
ContextWindow = Annotated[
    int | None,
    typer.Option(
        help="Tokens one call may read and write together: the embedded model's context "
        "(default 8192), or what your server allows (combee's groups then fit prompts to it).",
    ),
]
ExecutorName = Annotated[
    str,
    typer.Option(
        "--executor",
        help="Where rollouts and reflections run: asyncio (this process) | ray (a Ray cluster).",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        envvar="RAY_ADDRESS",
        help="Ray cluster to join with --executor ray (default: a local one).",
        show_default=False,
    ),
]
Client = Annotated[
    str, typer.Option(help="HTTP client: openai (the SDK) | lean (same wire format, less CPU).")
]
Concurrency = Annotated[
    int | None,
    typer.Option(
        help="Most LLM calls in flight at once (default: the run's largest batch or evaluation "
        "set, up to 1024).",
        show_default=False,
    ),
]
Timeout = Annotated[float, typer.Option(help="Seconds per LLM call attempt.")]
MaxRetries = Annotated[int, typer.Option(help="Retries per call on 429/5xx/timeouts.")]
Seed = Annotated[int, typer.Option(help="Seed of every shuffle, split and sampling choice.")]
Task = Annotated[
    str,
    typer.Option(
        help="formula | finer | rules | jsonl (with --data) | jsonl:PATH | agentdojo:SUITE "
        "(banking, slack, travel, workspace, all) | a plugin's."
    ),
]
Data = Annotated[str | None, typer.Option(help="JSONL file for --task jsonl.")]
MaxTokens = Annotated[int, typer.Option(help="Completion tokens per call.")]
Scorer = Annotated[str, typer.Option(help="jsonl scorer: exact | numeric | contains.")]
CachePath = Annotated[Path | None, typer.Option(help="SQLite response cache.")]
PricePrompt = Annotated[float | None, typer.Option(help="USD per 1M prompt tokens.")]
PriceCompletion = Annotated[float | None, typer.Option(help="USD per 1M completion tokens.")]

_DEFAULTS = {field.name: field.default for field in dataclasses.fields(Endpoint)}
ENDPOINT_OPTIONS: dict[str, tuple[Any, Any]] = {
    "model": (Model, DEFAULT_MODEL),
    "base_url": (BaseUrl, _DEFAULTS["base_url"]),
    "api_key_env": (ApiKeyEnv, _DEFAULTS["api_key_env"]),
    "client": (Client, _DEFAULTS["client"]),
    "json_mode": (JsonMode, _DEFAULTS["json_mode"]),
    "concurrency": (Concurrency, _DEFAULTS["concurrency"]),
    "timeout": (Timeout, _DEFAULTS["timeout_s"]),
    "max_retries": (MaxRetries, _DEFAULTS["max_retries"]),
    "redact": (Redact, _DEFAULTS["redact"]),
    "max_failures_in_a_row": (MaxFailuresInARow, _DEFAULTS["max_failures_in_a_row"]),
    "price_prompt": (PricePrompt, None),
    "price_completion": (PriceCompletion, None),
    "context_window": (ContextWindow, None),
}
"""The endpoint's flags, once for every command that talks to a model: each flag's type and
help, and its default (the :class:`Endpoint` field's)."""
_FIELD_OF_FLAG = {"timeout": "timeout_s", "price_prompt": "prices", "price_completion": "prices"}


def endpoint_field(flag: str) -> str:
    """The :class:`Endpoint` field an endpoint flag (``ENDPOINT_OPTIONS``) sets."""
    return _FIELD_OF_FLAG.get(flag, flag)


def on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether the flag ``name`` was given on the command line (not its default or variable)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def with_endpoint_options(**defaults: Any) -> Callable[[F], F]:
    """Give a command (which takes ``**options``) the endpoint's flags, with ``defaults`` in
    place of the endpoint's where the command needs others (a longer timeout, say)."""
    return with_parameters(
        [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=defaults.get(name, default),
                annotation=in_panel(annotation, "Endpoint"),
            )
            for name, (annotation, default) in ENDPOINT_OPTIONS.items()
        ]
    )


def endpoint_of(options: dict[str, Any], *, cache: Path | None, seed: int) -> Endpoint:
    """The endpoint the flags in ``options`` describe (taken out of ``options``)."""
    given = {name: options.pop(name) for name in ENDPOINT_OPTIONS}
    return endpoint(**given, cache=cache, seed=seed)


def endpoint_over(
    ctx: typer.Context, saved: Endpoint, options: dict[str, Any], *, cache: Path | None, seed: int
) -> Endpoint:
    """``saved`` (the endpoint a run recorded) with each endpoint flag given on the command line
    in place of its field (the flags are taken out of ``options``)."""
    flags = endpoint_of(options, cache=cache, seed=seed)
    given = {endpoint_field(name) for name in ENDPOINT_OPTIONS if on_command_line(ctx, name)}
    return dataclasses.replace(
        saved, **{name: getattr(flags, name) for name in given}, cache=cache, seed=seed
    )


def endpoint(
    *,
    model: str,
    base_url: str | None,
    api_key_env: str,
    json_mode: str,
    concurrency: int | None,
    timeout: float,
    max_retries: int,
    cache: Path | None,
    seed: int,
    client: str = "openai",
    price_prompt: float | None = None,
    price_completion: float | None = None,
    redact: bool = True,
    max_failures_in_a_row: int = MAX_FAILURES_IN_A_ROW,
    context_window: int | None = None,
) -> Endpoint:
    """The endpoint the flags describe; the run connects to it once every setting is checked."""
    prices = None
    if price_prompt is not None or price_completion is not None:
        prices = (price_prompt or 0.0, price_completion or 0.0)
    return Endpoint(
        model,
        base_url=base_url,
        api_key_env=api_key_env,
        client=client,
        json_mode=json_mode,
        concurrency=concurrency,
        max_retries=max_retries,
        timeout_s=timeout,
        cache=cache,
        prices=prices,
        seed=seed,
        redact=redact,
        max_failures_in_a_row=max_failures_in_a_row or None,
        context_window=context_window,
    )


@contextmanager
def executor(name: str, ray_address: str | None) -> Iterator[Any]:
    """The executor ``--executor`` names (None: the library's default), closed at the end."""
    if name == "asyncio":
        yield None
        return
    if name != "ray":
        raise ConfigError(f"{name!r} is not asyncio or ray", setting="executor")
    from combee.exec import RayExecutor

    pool = RayExecutor(ray_address)
    try:
        yield pool
    finally:
        pool.close()


def batch_size_value(text: str) -> int | str:
    """``--batch-size`` as the library takes it: a whole number, or a word such as ``auto``
    (which the library checks)."""
    size = text.strip()
    return int(size) if size.lstrip("-").isdigit() else size


Track = Annotated[
    str | None, typer.Option(help="Track the run in mlflow (params, metrics, playbooks).")
]
TrackingUri = Annotated[
    str | None,
    typer.Option(
        envvar="MLFLOW_TRACKING_URI",
        help="MLflow tracking server, e.g. http://127.0.0.1:5000 (default: MLFLOW_TRACKING_URI).",
    ),
]
Experiment = Annotated[str, typer.Option(help="MLflow experiment the run is logged in.")]


def trackers(track: str | None, out: Path, tracking_uri: str | None, experiment: str) -> list[Any]:
    """The observers ``--track`` asks for (none without it)."""
    if track is None:
        return []
    if track != "mlflow":
        raise ConfigError(f"{track!r} is not a tracker; use mlflow", setting="track")
    from combee.runs.tracking import MlflowTracker

    return [MlflowTracker(out, tracking_uri=tracking_uri, experiment=experiment)]
