"""What a benchmark runs: configurations, the simulated server, and the named presets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import Any

from combee.core.controller import DEFAULT_TAU
from combee.errors import ConfigError
from combee.sim.config import SimConfig

_CONFIG = re.compile(
    r"^(?P<strategy>sequential|naive|combee)(?::(?P<size>auto|\d+))?(?::(?P<cap>\d+))?"
    r"(?:@(?P<client>\w+))?$"
)
CLIENTS = ("openai", "lean")


@dataclass(frozen=True)
class BenchConfig:
    """One row of the benchmark. ``batch_size`` None means ``auto``."""

    strategy: str
    batch_size: int | None
    client: str
    max_batch_size: int | None = None
    """auto only: this configuration's cap (None: the plan's)."""

    @property
    def name(self) -> str:
        size = "" if self.strategy == "sequential" else f":{self.batch_size or 'auto'}"
        cap = f":{self.max_batch_size}" if self.max_batch_size is not None else ""
        return f"{self.strategy}{size}{cap}@{self.client}"


def parse_configs(text: str, *, default_client: str) -> list[BenchConfig]:
    """``sequential, naive:100, combee:64, combee:auto@openai, combee:auto:500`` ->
    configurations (``auto:500``: auto with a cap of 500)."""
    configs: list[BenchConfig] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        match = _CONFIG.match(item)
        if match is None:
            raise ConfigError(
                f"--configs item {item!r}: write STRATEGY[:SIZE|:auto[:MAX]][@CLIENT], e.g. "
                "combee:64 or combee:auto:500@openai (strategies: sequential, naive, combee)"
            )
        client = match["client"] or default_client
        if client not in CLIENTS:
            raise ConfigError(f"--configs item {item!r}: client must be openai or lean")
        size_text = match["size"]
        strategy = match["strategy"]
        if strategy == "sequential":
            size: int | None = 1
        elif size_text is None:
            raise ConfigError(f"--configs item {item!r}: give a batch size or auto")
        elif size_text == "auto":
            size = None
        else:
            size = int(size_text)
            if size < 1:
                raise ConfigError(f"--configs item {item!r}: the batch size must be at least 1")
        cap = match["cap"]
        if cap is not None and (size is not None or int(cap) < 1):
            raise ConfigError(f"--configs item {item!r}: only auto takes a cap, at least 1")
        configs.append(BenchConfig(strategy, size, client, None if cap is None else int(cap)))
    if not configs:
        raise ConfigError("--configs names no configuration")
    return configs


@dataclass(frozen=True, kw_only=True)
class BenchSettings:
    """The settings every configuration of a plan runs with, declared once: the plan holds
    them and each configuration's run (:class:`combee.bench.worker.RunSpec`) gets them."""

    train_limit: int = 500
    epochs: int = 1
    seed: int = 0
    concurrency: int | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    tau: float = DEFAULT_TAU
    max_batch_size: int = 100
    dedup: bool | None = None
    """Near-duplicate folding as ``combee train --dedup`` takes it (None: the default, on when
    the ``embed`` extra is installed)."""
    redact: bool = True
    """Secrets redacted in every prompt and reply, as ``combee train`` does by default."""
    screen: bool = True
    """Lessons screened for planted text and copies of the data, as ``combee train`` does."""

    def bench_settings(self) -> dict[str, Any]:
        """Each benchmark setting by name, with its value here."""
        return {item.name: getattr(self, item.name) for item in fields(BenchSettings)}


@dataclass(frozen=True)
class BenchPlan(BenchSettings):
    configs: list[BenchConfig]
    server: SimConfig
    title: str = "combee bench"


@dataclass(frozen=True)
class Preset:
    """A named scenario; ``flags`` are its ``combee bench`` options, for the docs."""

    description: str
    configs: str
    server: dict[str, float | int]
    options: dict[str, float | int] = field(default_factory=dict)


PRESETS: dict[str, Preset] = {
    "speed": Preset(
        "Formula 500, 1 epoch; ttft 0.05 s, 2,000 tokens/s, capacity 512",
        "sequential, naive:100, combee:16, combee:32, combee:64, combee:100, combee:250, "
        "combee:500, combee:auto, combee:auto:500, combee:500@openai, combee:auto@openai",
        {"ttft_s": 0.05, "decode_tokens_per_s": 2000.0, "capacity": 512},
    ),
    "saturated": Preset(
        "A saturated endpoint: capacity 32; fixed sizes 8..128 (and 100, the default cap) "
        "against auto",
        "combee:8, combee:16, combee:32, combee:64, combee:100, combee:128, combee:auto",
        {"ttft_s": 0.05, "decode_tokens_per_s": 2000.0, "capacity": 32},
    ),
    "faults": Preset(
        "20% of calls faulted: 5% each of 429 (Retry-After 0.2 s), 500, hang, bad body",
        "combee:100, combee:auto, combee:100@openai",
        {
            "ttft_s": 0.05,
            "decode_tokens_per_s": 2000.0,
            "capacity": 512,
            "rate_429": 0.05,
            "retry_after_s": 0.2,
            "rate_500": 0.05,
            "rate_hang": 0.05,
            "rate_bad_body": 0.05,
        },
        {"timeout_s": 2.5, "max_retries": 6},
    ),
}
