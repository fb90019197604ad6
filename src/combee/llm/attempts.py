"""One logical call's attempts at the backend: under the concurrency limit, each within the
timeout, transient failures retried with backoff (``Retry-After`` honoured, a 429 pausing the
whole gate), the failure streak and the accounting kept."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

from combee.errors import CombeeError, EndpointError, parameter
from combee.llm.accounting import Accounting
from combee.llm.call_gate import CallGate
from combee.llm.guards import FailureStreak
from combee.llm.retry import Failure, backoff_delay, classify, failure_error
from combee.llm.types import Backend, Completion, Request


@dataclass
class Attempts:
    """The retry policy around ``backend``."""

    backend: Backend
    gate: CallGate
    accounting: Accounting
    streak: FailureStreak
    max_retries: int
    timeout_s: float | None
    backoff_base_s: float
    backoff_max_s: float
    rng: random.Random
    shown_url: str | None
    key_variable: str | None

    async def run(
        self, request: Request, role: str, start: float, *, preflight: bool = False
    ) -> Completion:
        """The backend's completion, retrying transient failures; a preflight that cannot
        connect fails at once (:class:`EndpointError` naming the URL)."""
        sent: float | None = None
        attempts = 0
        while True:
            failure: Failure | None = None
            async with self.gate:
                if sent is None:
                    sent = time.perf_counter()
                attempts += 1
                try:
                    completion = await asyncio.wait_for(
                        self.backend.complete(request), self.timeout_s
                    )
                except CombeeError as error:
                    self.accounting.failed(
                        role, start=start, sent=sent, attempts=attempts, reason=str(error)
                    )
                    raise
                except Exception as error:
                    failure = classify(error)
            if failure is None:
                break
            if preflight and failure.kind == "connection":
                self.accounting.failed(
                    role, start=start, sent=sent, attempts=attempts, reason=failure.detail
                )
                raise EndpointError(
                    f"cannot reach the LLM endpoint at {self.shown_url or self.backend.model}: "
                    f"{failure.detail}. Check {parameter('base_url')} and that the server is "
                    "running.",
                    setting="base_url",
                )
            if not failure.transient or attempts > self.max_retries:
                self.accounting.failed(
                    role, start=start, sent=sent, attempts=attempts, reason=failure.kind
                )
                raise self.streak.failed(
                    failure_error(
                        failure,
                        role=role,
                        attempts=attempts,
                        model=self.backend.model,
                        url=self.shown_url,
                        key_variable=self.key_variable,
                    )
                )
            self.accounting.retried(role, failure.kind)
            delay = backoff_delay(
                attempts - 1, failure, base_s=self.backoff_base_s, max_s=self.backoff_max_s,
                rng=self.rng,
            )  # fmt: skip
            if failure.kind == "429":
                self.gate.pause(delay)
            await asyncio.sleep(delay)
        self.streak.succeeded()
        return self.accounting.served(role, completion, start=start, sent=sent, attempts=attempts)
