"""The gateway's store survives ``kill -9``: every request that got a response is stored exactly
once, and learning continues from the watermark after a restart. The gateway runs as its own
process (``combee serve``), the upstream is the scripted server over HTTP."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

import openai

from combee.sim import SimConfig, serve_in_thread
from tests.serve.gateway_process import GatewayProcess
from tests.tasks.test_tool_agent import weather_model

OPERATOR = "operator-token-from-the-environment"


def post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {OPERATOR}"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read())


def get(url: str) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {OPERATOR}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


async def ask(base_url: str, marker: str) -> str | None:
    """One request; its trace id, or None when it got no response."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=120)
    try:
        raw = await client.chat.completions.with_raw_response.create(
            model="sim", messages=[{"role": "user", "content": f"request {marker}"}]
        )
        return raw.headers.get("x-combee-trace")
    except openai.APIError:
        return None
    finally:
        await client.close()


def stored_markers(store: Path) -> list[str]:
    with sqlite3.connect(store / "traces.sqlite") as db:
        rows = db.execute("SELECT messages FROM exchanges").fetchall()
    return [json.loads(row[0])[0]["content"].split()[-1] for row in rows]


def test_kill_9_mid_burst_loses_no_answered_request_and_learning_resumes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    # Half of the requests hang at the upstream (drawn per request index, seeded), so the
    # kill finds a burst in flight whatever the machine's speed.
    config = SimConfig(ttft_s=0.05, rate_hang=0.5, hang_s=600.0)
    with serve_in_thread(weather_model) as upstream:
        gateway = GatewayProcess(upstream.base_url, str(store), operator=OPERATOR)
        try:
            warm = [asyncio.run(ask(gateway.url + "/v1", f"w{n}")) for n in range(10)]
            assert all(warm)
            for trace in warm:
                post(gateway.url + "/v1/feedback", {"trace_id": trace, "success": True})
            first = post(gateway.url + "/v1/learn", {})
            assert first["version"] == 2 and first["traces"] == 10

            upstream.reset(config=config)
            answered: dict[str, str] = {}

            async def burst() -> None:
                async def one(n: int) -> None:
                    trace = await ask(gateway.url + "/v1", f"b{n}")
                    if trace is not None:
                        answered[f"b{n}"] = trace

                tasks = [asyncio.create_task(one(n)) for n in range(100)]
                # Wait until the answers stop coming (the hanging half never will), then kill.
                seen, quiet_since = -1, time.monotonic()
                while time.monotonic() - quiet_since < 2.0:
                    await asyncio.sleep(0.1)
                    if len(answered) != seen:
                        seen, quiet_since = len(answered), time.monotonic()
                gateway.kill()
                await asyncio.gather(*tasks)

            asyncio.run(burst())
        finally:
            gateway.stop()
        in_flight = [r for r in upstream.records if r.fault == "hang"]
        assert 20 <= len(answered) <= 80 and in_flight  # answered and unanswered both
        markers = stored_markers(store)
        for marker in answered:
            assert markers.count(marker) == 1, marker
        assert len(markers) == 10 + len(answered)  # nothing unanswered, nothing twice

        upstream.reset(config=SimConfig())
        restarted = GatewayProcess(upstream.base_url, str(store), operator=OPERATOR)
        try:
            for trace in list(answered.values())[:10]:
                post(restarted.url + "/v1/feedback", {"trace_id": trace, "success": False})
            second = post(restarted.url + "/v1/learn", {})
            state = get(restarted.url + "/v1/playbook")
        finally:
            restarted.stop()
    # Only the 10 traces scored since the watermark were folded, onto version 2.
    assert second["version"] == 3 and second["traces"] == 10
    assert state["active"]["version"] == 3 and state["active"]["parent"] == 2
    assert [v["traces"] for v in state["versions"]] == [0, 10, 10]
