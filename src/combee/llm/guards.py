"""Limits the client holds every call to: a reply's size, and failures one after another."""

from __future__ import annotations

import math

from combee.errors import CombeeError, ConfigError, LLMCallError, RunFailedError

REPLY_CHARS_PER_TOKEN = 32
MIN_REPLY_CHARS = 65_536
"""A reply longer than ``max(MIN_REPLY_CHARS, REPLY_CHARS_PER_TOKEN * max_tokens)`` characters
is refused: no tokenizer makes tokens that long, so the server ignored the limit."""

DEFAULT_MAX_REPLY_BYTES = 16 << 20
"""The most bytes of a reply's HTTP body read, whatever ``max_tokens`` allows
(:mod:`combee.llm.reply_limit`): 65,536 tokens of four characters, each one escaped, take
about 2 MB."""
MIN_MAX_REPLY_BYTES = 65_536
"""A lower limit would refuse ordinary replies."""

DEFAULT_CONCURRENCY = 64
"""Calls in flight at once when nothing asks for more."""

MAX_CONCURRENCY = 1024
"""The most calls in flight a run widens the client to when its concurrency was left to follow
the run (the open-file limit may cap it lower)."""

MAX_FAILURES_IN_A_ROW = 32
"""Calls that may fail for good one after another before the run stops: beyond it the endpoint
is down (a sample that fails alone only costs that sample)."""


def oversized_reply(text: str, max_tokens: int, role: str) -> LLMCallError | None:
    """The error for a reply far longer than ``max_tokens`` allows, else None."""
    most = max(MIN_REPLY_CHARS, REPLY_CHARS_PER_TOKEN * max_tokens)
    if len(text) <= most:
        return None
    return LLMCallError(
        f"{role}: the reply has {len(text):,} characters, more than {max_tokens} tokens can hold "
        f"(at most {most:,}); the server ignores max_tokens",
        role=role,
        kind="oversized",
    )


class FailureStreak:
    """Counts calls that failed for good since the last one that worked; at ``limit`` (None:
    never) the endpoint is taken as down and the run fails."""

    def __init__(self, limit: int | None, endpoint: str) -> None:
        self.limit = limit
        self.endpoint = endpoint
        self.count = 0

    def succeeded(self) -> None:
        self.count = 0

    def failed(self, error: CombeeError) -> CombeeError:
        """``error``, or a :class:`RunFailedError` saying what the endpoint last answered once
        the streak reaches the limit."""
        self.count += 1
        if self.limit is None or self.count < self.limit:
            return error
        return RunFailedError(
            f"{self.count} LLM calls in a row failed for good (the limit is "
            f"max_failures_in_a_row = {self.limit}); the endpoint {self.endpoint} last "
            f"answered: {error}"
        )


def check_limits(
    concurrency: int | None,
    max_retries: int,
    timeout_s: float | None,
    max_failures_in_a_row: int | None,
) -> None:
    """A ConfigError naming the first limit that is not a usable value."""
    if concurrency is not None and (
        isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1
    ):
        raise ConfigError(
            f"must be a whole number of at least 1 (got {concurrency!r})", setting="concurrency"
        )
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise ConfigError(
            f"must be a whole number, 0 or more (got {max_retries!r})", setting="max_retries"
        )
    if timeout_s is not None and (not math.isfinite(timeout_s) or timeout_s <= 0):
        raise ConfigError(
            f"must be a positive number of seconds (got {timeout_s!r})", setting="timeout_s"
        )
    streak = max_failures_in_a_row
    whole = isinstance(streak, int) and not isinstance(streak, bool)
    if streak is not None and (not whole or streak < 1):
        raise ConfigError(
            f"must be a whole number of at least 1, or None for no limit (got {streak!r})",
            setting="max_failures_in_a_row",
        )
