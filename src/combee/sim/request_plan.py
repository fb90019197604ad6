"""Each request's fate in the scripted server: its fault and its latency factor (jitter,
stragglers), drawn from its own seeded RNG, and the latency its token counts cost."""

from __future__ import annotations

import random
from dataclasses import dataclass

from combee.sim.config import SimConfig


@dataclass(frozen=True)
class Plan:
    """What happens to one request: its fault (None: none), latency factor, bad-body form."""

    fault: str | None
    latency_factor: float
    bad_body_variant: int


def plan_for(config: SimConfig, index: int) -> Plan:
    """The fate of request ``index``: drawn from its own seeded RNG, whatever the arrival order."""
    rng = random.Random(config.seed * 1_000_003 + index)
    draw_fault, draw_jitter, draw_straggler = rng.random(), rng.random(), rng.random()
    fault: str | None = None
    if config.fault_first_n is None or index < config.fault_first_n:
        edge = 0.0
        for name, rate in (
            ("429", config.rate_429),
            ("500", config.rate_500),
            ("hang", config.rate_hang),
            ("bad_body", config.rate_bad_body),
        ):
            edge += rate
            if draw_fault < edge:
                fault = name
                break
    factor = 1.0 + config.jitter * (2.0 * draw_jitter - 1.0)
    if draw_straggler < config.straggler_rate:
        factor *= config.straggler_factor
    return Plan(fault, factor, index % 2)


def latency(config: SimConfig, prompt_tokens: int, completion_tokens: int) -> tuple[float, float]:
    """Seconds to the first token (prompt included), then seconds to decode the completion."""
    first = config.ttft_s
    if config.prompt_tokens_per_s:
        first += prompt_tokens / config.prompt_tokens_per_s
    decode = completion_tokens / config.decode_tokens_per_s if config.decode_tokens_per_s else 0.0
    return first, decode
