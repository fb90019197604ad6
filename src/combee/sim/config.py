"""How the simulated server behaves: latency, capacity and injected faults."""

from __future__ import annotations

from dataclasses import dataclass

from combee.errors import ConfigError
from combee.sim.gates import Gate, check_disjoint


@dataclass(frozen=True)
class SimConfig:
    """Simulated latency and faults. Rates are probabilities per request; all draws are seeded."""

    seed: int = 0
    ttft_s: float = 0.0
    decode_tokens_per_s: float | None = None
    """None: the completion is produced instantly."""
    prompt_tokens_per_s: float | None = None
    """None: the prompt is processed instantly."""
    capacity: int | None = None
    """Requests served at once (like a vLLM batch); the rest queue FIFO. None: no limit."""
    jitter: float = 0.0
    """Relative latency noise: each latency is scaled by uniform(1 - jitter, 1 + jitter)."""
    straggler_rate: float = 0.0
    straggler_factor: float = 5.0
    rate_429: float = 0.0
    retry_after_s: float = 1.0
    rate_500: float = 0.0
    rate_hang: float = 0.0
    hang_s: float = 600.0
    rate_bad_body: float = 0.0
    """A 200 whose body is truncated JSON or not JSON at all."""
    fault_first_n: int | None = None
    """Only requests with index < fault_first_n may fault (None: every request may)."""
    honour_max_tokens: bool = True
    """False: a faulty server that sends replies longer than ``max_tokens`` allows."""
    flood_bytes: int | None = None
    """Pad every reply's body to this many bytes, streamed (:mod:`combee.sim.flood`): a server
    that floods its client; ``SimServer.flood_sent`` counts the bytes that left."""
    gate_n: int | None = None
    """Hold every request until this many have arrived (proves that calls overlap)."""
    gates: tuple[Gate, ...] = ()
    """Calls held until all calls of their gate have arrived, named by role and place
    (:mod:`combee.sim.gates`): a test proves that a client overlaps them by counting."""
    gate_timeout_s: float = 60.0
    """How long a held request waits for its gate at most: only so that a client that does
    not overlap its calls cannot hang a test (its gate stays short and the test sees fewer
    calls at once)."""
    models: tuple[str, ...] = ("sim",)
    authorization: str | None = None
    """When set, a request whose ``Authorization`` header is not exactly this gets a 401 (a
    gateway that checks credentials)."""

    def __post_init__(self) -> None:
        rates = {
            "rate_429": self.rate_429,
            "rate_500": self.rate_500,
            "rate_hang": self.rate_hang,
            "rate_bad_body": self.rate_bad_body,
            "straggler_rate": self.straggler_rate,
        }
        for name, rate in rates.items():
            if not 0.0 <= rate <= 1.0:
                raise ConfigError(f"sim server: {name} must be within [0, 1], got {rate}")
        if self.rate_429 + self.rate_500 + self.rate_hang + self.rate_bad_body > 1.0:
            raise ConfigError("sim server: the fault rates must add up to at most 1")
        if self.capacity is not None and self.capacity < 1:
            raise ConfigError(f"sim server: capacity must be at least 1, got {self.capacity}")
        if not 0.0 <= self.jitter < 1.0:
            raise ConfigError(f"sim server: jitter must be within [0, 1), got {self.jitter}")
        check_disjoint(self.gates)
        for name, seconds in (
            ("ttft_s", self.ttft_s),
            ("retry_after_s", self.retry_after_s),
            ("hang_s", self.hang_s),
        ):
            if seconds < 0:
                raise ConfigError(f"sim server: {name} must be 0 or more, got {seconds}")
        for name, speed in (
            ("decode_tokens_per_s", self.decode_tokens_per_s),
            ("prompt_tokens_per_s", self.prompt_tokens_per_s),
        ):
            if speed is not None and speed <= 0:
                raise ConfigError(f"sim server: {name} must be positive, got {speed}")
        if self.straggler_factor < 1.0:
            raise ConfigError(
                f"sim server: straggler_factor must be at least 1, got {self.straggler_factor}"
            )
