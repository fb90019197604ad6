"""A 429 slows the whole client down, not only the call that got it."""

from __future__ import annotations

import asyncio

from combee.llm import connect
from combee.sim import SimConfig, serve_in_thread
from combee.sim.responders import echo_responder


async def test_a_429_pauses_the_calls_that_start_after_it() -> None:
    config = SimConfig(rate_429=1.0, fault_first_n=1, retry_after_s=0.6)
    with serve_in_thread(echo_responder, config) as server:
        llm = connect("sim", base_url=server.base_url, concurrency=1)
        try:
            replies = await asyncio.gather(
                *(llm.complete([{"role": "user", "content": f"n{i}"}], role="g") for i in range(3))
            )
        finally:
            await llm.aclose()
        records = server.records
    assert [r.text for r in replies] == ["echo: n0", "echo: n1", "echo: n2"]
    refused = next(r for r in records if r.status == 429)
    later = [r for r in records if r.status == 200]
    # Every call after the 429 waited out its Retry-After, the other samples' calls included.
    assert all(r.arrived >= refused.finished + 0.55 for r in later)
