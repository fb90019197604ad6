"""Failure classification and backoff (pure functions)."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import openai
import pytest

from combee.llm.retry import (
    BackendFailure,
    Failure,
    backoff_delay,
    classify,
    retry_after_seconds,
)

# The SDK may be built on httpx or httpx2; classification only reads status and headers.
REQUEST: Any = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")


def status_error(status: int, headers: dict[str, str] | None = None) -> openai.APIStatusError:
    response: Any = httpx.Response(status, headers=headers or {}, request=REQUEST)
    body = {"error": {"message": f"status {status}"}}
    return openai.APIStatusError(f"status {status}", response=response, body=body)


@pytest.mark.parametrize(
    ("status", "kind", "transient"),
    [
        (429, "429", True),
        (500, "5xx", True),
        (503, "5xx", True),
        (408, "timeout", True),
        (400, "4xx", False),
        (401, "4xx", False),
        (404, "4xx", False),
    ],
)
def test_http_status_classification(status: int, kind: str, transient: bool) -> None:
    failure = classify(status_error(status))
    assert failure.kind == kind
    assert failure.status == status
    assert failure.transient is transient


def test_retry_after_header_is_read() -> None:
    assert classify(status_error(429, {"retry-after": "3"})).retry_after_s == 3.0
    assert classify(status_error(503, {"retry-after-ms": "250"})).retry_after_s == 0.25
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_after_seconds({}) is None


def test_transport_failures() -> None:
    assert classify(TimeoutError()).kind == "timeout"
    assert classify(openai.APITimeoutError(request=REQUEST)).kind == "timeout"
    assert classify(openai.APIConnectionError(request=REQUEST)).kind == "connection"
    assert classify(ConnectionResetError()).kind == "connection"
    assert classify(json.JSONDecodeError("bad", "{", 0)).kind == "bad_body"


def test_unknown_errors_are_permanent() -> None:
    failure = classify(RuntimeError("boom"))
    assert not failure.transient
    assert "boom" in failure.detail


def test_backend_failures_keep_their_classification() -> None:
    failure = classify(BackendFailure("5xx", "overloaded", status=503, retry_after_s=1.5))
    assert failure == Failure("5xx", 503, "overloaded", 1.5)


def test_backoff_is_full_jitter_within_the_exponential_cap() -> None:
    rng = random.Random(0)
    failure = Failure("5xx", 500, "x")
    for attempt in range(8):
        cap = min(30.0, 0.5 * 2**attempt)
        delays = [
            backoff_delay(attempt, failure, base_s=0.5, max_s=30.0, rng=rng) for _ in range(50)
        ]
        assert all(0.0 <= delay <= cap for delay in delays)
        assert max(delays) > cap / 2  # jittered over the whole range, not pinned low


def test_backoff_is_deterministic_given_the_seed() -> None:
    failure = Failure("timeout", None, "x")

    def delays(seed: int) -> list[float]:
        rng = random.Random(seed)
        return [backoff_delay(a, failure, base_s=0.5, max_s=30.0, rng=rng) for a in range(5)]

    assert delays(1) == delays(1)
    assert delays(1) != delays(2)


def test_retry_after_wins_but_is_capped() -> None:
    rng = random.Random(0)
    assert backoff_delay(0, Failure("429", 429, "x", 4.0), base_s=0.5, max_s=30, rng=rng) == 4.0
    assert backoff_delay(0, Failure("429", 429, "x", 90.0), base_s=0.5, max_s=30, rng=rng) == 30
