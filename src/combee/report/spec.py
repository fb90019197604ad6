"""A comparison grid in a TOML file (``combee compare --spec grid.toml``)::

    task = "formula"
    strategies = ["naive", "combee"]
    batch_sizes = [4, 8, "auto"]
    seeds = [0, 1]
    out = "runs/grid"
    train_limit = 40          # any combee.train keyword
    test_limit = 20

    [endpoint]                # any combee.llm.Endpoint field but cache and seed
    model = "gpt-4o-mini"
    base_url = "http://127.0.0.1:8000/v1"

Paths (``out``, ``data``, ``initial_context``) are relative to the current directory, as on the
command line.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from combee.errors import ConfigError
from combee.files import read_text
from combee.llm.connect import Endpoint
from combee.settings import NAMES

GRID_KEYS = ("task", "strategies", "batch_sizes", "seeds", "out")
RESERVED = {
    "strategy": "strategies",
    "batch_size": "batch_sizes",
    "seed": "seeds",
    "run_dir": "out",
    "llm": "[endpoint]",
}
"""``combee.train`` keywords a grid sets per cell, and what to write instead."""
NOT_IN_A_SPEC = {"overwrite", "observers", "progress", "executor", "record"}
ENDPOINT_KEYS = tuple(
    f.name for f in dataclasses.fields(Endpoint) if f.name not in ("cache", "seed")
)


def train_settings() -> set[str]:
    """The ``combee.train`` keywords a grid may set for every cell."""
    from combee.api import train_async  # the training machinery, only once a grid is checked

    keywords = inspect.signature(train_async).parameters.values()
    named = {p.name for p in keywords if p.kind is inspect.Parameter.KEYWORD_ONLY}
    names = named | set(NAMES)
    return names - set(RESERVED) - NOT_IN_A_SPEC


@dataclass
class GridSpec:
    """A grid as read from a spec file; None where the file leaves a value to the caller."""

    path: Path
    task: str | None = None
    strategies: list[str] | None = None
    batch_sizes: list[int | str] | None = None
    seeds: list[int] | None = None
    out: Path | None = None
    endpoint: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


def _bad(path: Path, problem: str) -> ConfigError:
    return ConfigError(f"({path}) {problem}", setting="spec")


def _list(path: Path, data: dict[str, Any], key: str, kinds: tuple[type, ...]) -> list[Any] | None:
    if key not in data:
        return None
    value = data[key]
    if not isinstance(value, list) or not value:
        raise _bad(path, f"{key} must be a non-empty list (got {value!r})")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, kinds):
            raise _bad(
                path, f"{key} holds {item!r}, not a {' or '.join(k.__name__ for k in kinds)}"
            )
    return value


def load_spec(path: str | os.PathLike[str]) -> GridSpec:
    """Read and check a grid spec; every problem names the file and the key."""
    file = Path(path)
    try:
        data = tomllib.loads(read_text(file))
    except OSError as error:
        raise _bad(file, f"cannot be read: {error.strerror}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise _bad(file, f"is not valid TOML: {error}") from None
    spec = GridSpec(path=file)
    allowed = train_settings()
    for key in data:
        if key in RESERVED:
            raise _bad(file, f"sets {key}: a grid gives {RESERVED[key]} instead")
        if key not in allowed and key not in GRID_KEYS and key != "endpoint":
            raise _bad(file, f"has an unknown key {key!r} (not a grid key or combee.train setting)")
    if "task" in data:
        if not isinstance(data["task"], str):
            raise _bad(file, f"task must be a name (got {data['task']!r})")
        spec.task = data["task"]
    spec.strategies = _list(file, data, "strategies", (str,))
    spec.batch_sizes = _list(file, data, "batch_sizes", (int, str))
    spec.seeds = _list(file, data, "seeds", (int,))
    if "out" in data:
        if not isinstance(data["out"], str):
            raise _bad(file, f"out must be a directory path (got {data['out']!r})")
        spec.out = Path(data["out"])
    endpoint = data.get("endpoint", {})
    if not isinstance(endpoint, dict):
        raise _bad(file, "endpoint must be a table ([endpoint])")
    for key in endpoint:
        if key not in ENDPOINT_KEYS:
            raise _bad(file, f"[endpoint] has an unknown key {key!r} ({', '.join(ENDPOINT_KEYS)})")
    spec.endpoint = dict(endpoint)
    if isinstance(spec.endpoint.get("prices"), list):
        spec.endpoint["prices"] = tuple(spec.endpoint["prices"])
    spec.settings = {k: v for k, v in data.items() if k in allowed}
    if isinstance(spec.settings.get("initial_context"), str):
        spec.settings["initial_context"] = Path(spec.settings["initial_context"])
    return spec
