"""Options several commands share, and the endpoint they describe."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from combee.cli.setting_options import (
    in_panel,
    setting_annotation,
    setting_default,
    settings_from_options,
    with_parameters,
)
from combee.errors import ConfigError
from combee.llm.connect import ENDPOINT_SETTINGS, Endpoint

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

Resume = Annotated[
    Path | None,
    typer.Option(help="Continue the unfinished run in this folder with its recorded settings."),
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
Seed = Annotated[int, typer.Option(help="Seed of every shuffle, split and sampling choice.")]


def renamed(old: str, new: str) -> Any:
    """The hidden option of a flag's old spelling: it still works, with a one-line notice. Limits
    are ``--train-limit``/``--val-limit``/``--test-limit``, or ``--limit`` where a command has
    one (tests/cli/test_limit_flags.py holds every command to it)."""

    def notice(value: Any) -> Any:
        if value is not None:
            typer.echo(f"note: {old} is now {new}; the old spelling will go away", err=True)
        return value

    return typer.Option(old, hidden=True, callback=notice, help=f"Old spelling of {new}.")


def given(new: T, old: T | None) -> T:
    """A renamed flag's value: the old spelling's when that was given."""
    return new if old is None else old


Task = Annotated[
    str,
    typer.Option(
        help="formula | finer | rules | jsonl (with --data) | jsonl:PATH | agentdojo:SUITE "
        "(banking, slack, travel, workspace, all) | a plugin's."
    ),
]
Data = Annotated[str | None, typer.Option(help="JSONL file for --task jsonl.")]
Scorer = Annotated[str, typer.Option(help="jsonl scorer: exact | numeric | contains.")]
CachePath = Annotated[Path | None, typer.Option(help="SQLite response cache.")]
PricePrompt = Annotated[float | None, typer.Option(help="USD per 1M prompt tokens.")]
PriceCompletion = Annotated[float | None, typer.Option(help="USD per 1M completion tokens.")]

_ENDPOINT_FLAGS = {item.option: item for item in ENDPOINT_SETTINGS if item.option is not None}
"""The endpoint settings that are a flag each, by the flag's parameter name."""
ENDPOINT_OPTIONS: dict[str, tuple[Any, Any]] = {
    **{
        flag: (setting_annotation(item), setting_default(item))
        for flag, item in _ENDPOINT_FLAGS.items()
    },
    "price_prompt": (PricePrompt, None),
    "price_completion": (PriceCompletion, None),
}
"""The endpoint's flags, once for every command that talks to a model, made from
:class:`Endpoint`'s declarations (the two prices make one field)."""


def endpoint_field(flag: str) -> str:
    """The :class:`Endpoint` field an endpoint flag (``ENDPOINT_OPTIONS``) sets."""
    item = _ENDPOINT_FLAGS.get(flag)
    return "prices" if item is None else item.name


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
    """The endpoint the flags in ``options`` describe (taken out of ``options``); the run
    connects to it once every setting is checked."""
    given = {name: options.pop(name) for name in ENDPOINT_OPTIONS}
    prompt, completion = given.pop("price_prompt"), given.pop("price_completion")
    priced = prompt is not None or completion is not None
    fields = settings_from_options(list(_ENDPOINT_FLAGS.values()), given)
    return Endpoint(
        **fields,
        prices=(prompt or 0.0, completion or 0.0) if priced else None,
        cache=cache,
        seed=seed,
    )


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
