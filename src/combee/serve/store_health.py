"""Whether the trace store can write, asked before an exchange is sent upstream.

While the store's last commit failed (a full disk, a database stopped), every request would cost
an upstream call whose exchange cannot be kept: the gateway answers 503 at once instead, and each
such request first tries one small write (one at a time, shared by the requests that arrive
meanwhile), so the gateway serves again by itself once the store can write."""

from __future__ import annotations

import asyncio

from combee.serve.store import TraceStore

PROBE_WAIT_S = 1.0
"""How long a request waits for the store's answer before it is refused."""


class StoreHealth:
    """Probes of ``store``'s writer, one at a time."""

    def __init__(self, store: TraceStore) -> None:
        self.store = store
        self._probe: asyncio.Task[bool] | None = None

    async def problem(self, *, probe: bool = False) -> str | None:
        """Why the store cannot write now; None when it can. Without ``probe`` a store whose
        last commit succeeded is taken to write; with it (``/readyz``), a write is tried."""
        if self.store.problem is None and not probe:
            return None
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(self.store.probe())
        try:
            if await asyncio.wait_for(asyncio.shield(self._probe), PROBE_WAIT_S):
                return None
        except TimeoutError:
            return f"{self.store.problem or 'it did not answer'} (no answer in {PROBE_WAIT_S:g} s)"
        return self.store.problem or "it cannot write"

    def refusal(self, problem: str) -> str:
        """The message an agent gets while the store cannot write."""
        return (
            f"the gateway's trace store ({self.store.name}) cannot write: {problem}; "
            "nothing was sent upstream, retry shortly"
        )
