"""How ``combee compare`` merges its flags with a TOML spec: a flag given on the command line wins
over the spec, the spec over the flag's default."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import typer

from combee.cli.options import ENDPOINT_OPTIONS, endpoint_field, on_command_line
from combee.cli.setting_options import settings_from_options
from combee.declare import Declared
from combee.report.spec import GridSpec

TRAIN_FLAGS = {"method": "method", "initial_playbook": "initial_context"}
"""Flags of ``combee compare`` that set a ``combee.train`` keyword and are not declared
settings (flag parameter -> keyword); every declared setting is a flag of its own name."""
ENDPOINT_FLAGS = {
    name: endpoint_field(name) for name in ENDPOINT_OPTIONS if endpoint_field(name) != "prices"
}
"""Flags that set an :class:`Endpoint` field by themselves (flag parameter -> field); the two
prices make one field."""


def _csv(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _sizes(text: str) -> list[int | str]:
    return [int(p) if p.lstrip("-").isdigit() else p for p in _csv(text)]


def _seeds(text: str) -> list[int | str]:
    return [int(p) if p.lstrip("-").isdigit() else p for p in _csv(text)]


def merged(
    ctx: typer.Context,
    flags: dict[str, Any],
    spec: GridSpec | None,
    declared: Sequence[Declared] = (),
) -> dict[str, Any]:
    """The grid's settings: a flag given on the command line wins over the spec, the spec over
    the flag's default (or its environment variable)."""

    def given(name: str) -> bool:
        return on_command_line(ctx, name)

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
    options = {item.name: item.option for item in declared}
    for name, value in settings_from_options(declared, flags).items():
        if given(options[name] or name) or name not in train:
            train[name] = value
    endpoint = dict(spec.endpoint)
    for name, field_name in ENDPOINT_FLAGS.items():
        if given(name) or field_name not in endpoint:
            endpoint[field_name] = flags[name]
    if endpoint.get("max_failures_in_a_row") == 0:
        endpoint["max_failures_in_a_row"] = None  # 0 on the command line: never stop
    if given("price_prompt") or given("price_completion") or "prices" not in endpoint:
        prompt, completion = flags["price_prompt"], flags["price_completion"]
        given_price = prompt is not None or completion is not None
        endpoint["prices"] = (prompt or 0.0, completion or 0.0) if given_price else None
    return {**settings, "train": train, "endpoint": endpoint}
