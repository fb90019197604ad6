"""The learning gateway with a real agent framework in the loop: an OpenAI Agents SDK agent
whose model is an ``OpenAIChatCompletionsModel`` pointed at ``combee serve``, the gateway's
upstream the scripted server over HTTP. Conversations are recorded, feedback comes back, a
learning round makes playbook v2, and the next conversations' system prompts carry v2 (as the
upstream saw them)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")
pytest.importorskip("starlette")

import openai  # noqa: E402

from combee.llm import Endpoint  # noqa: E402
from combee.serve import feedback, serve_settings  # noqa: E402
from combee.serve.running import GatewayThread, create_gateway  # noqa: E402
from combee.sim import serve_in_thread  # noqa: E402
from tests.tasks.test_tool_agent import TEMPERATURES, weather_model  # noqa: E402

SYSTEM = "You are a weather assistant. Use the tools to answer."
CITIES = list(TEMPERATURES)
OPERATOR = "operator-token-for-tests"
"""The operator token the learning gateways of these tests take on their operator routes."""


@agents.function_tool
def get_weather(city: str) -> str:
    """The temperature in a city, in degrees Celsius.

    Args:
        city: The city's name.
    """
    return f"{TEMPERATURES.get(city, 'unknown')} C"


async def converse(base_url: str, session: str, city: str) -> str:
    """One conversation of the user's agent, unchanged but for its client's base URL."""
    client = openai.AsyncOpenAI(
        base_url=base_url, api_key="agent-key", default_headers={"X-Combee-Session": session}
    )
    agent = agents.Agent(
        name="weather",
        instructions=SYSTEM,
        tools=[get_weather],
        model=agents.OpenAIChatCompletionsModel(model="sim", openai_client=client),
    )
    try:
        result = await agents.Runner.run(
            agent,
            f"What is the temperature in {city}?",
            run_config=agents.RunConfig(tracing_disabled=True),
        )
    finally:
        await client.close()
    return str(result.final_output)


def test_an_agents_sdk_agent_learns_through_the_gateway(tmp_path: Path) -> None:
    with serve_in_thread(weather_model) as upstream:
        settings = serve_settings(store=str(tmp_path / "store"), learn_every=0)
        learner = Endpoint("sim", base_url=upstream.base_url)
        gateway, app = create_gateway(
            upstream.base_url,
            settings=settings,
            learner_llm=learner,
            learn_settings={"batch_size": 10, "strategy": "combee"},
            operator_token=OPERATOR,
        )
        with GatewayThread(app) as running:

            async def first_wave() -> list[str]:
                return await asyncio.gather(
                    *(
                        converse(running.base_url, f"c{n}", CITIES[n % len(CITIES)])
                        for n in range(40)
                    )
                )

            answers = asyncio.run(first_wave())
            assert all(
                f"{TEMPERATURES[CITIES[n % len(CITIES)]]} C" in answers[n] for n in range(40)
            )
            before = [r.body for r in upstream.records if r.body.get("tools")]
            assert len(before) == 80  # 40 conversations, two model calls each
            # Nothing learned yet: version 1 (the empty starting playbook) adds nothing.
            assert all(b["messages"][0]["content"] == SYSTEM for b in before)
            for n in range(30):
                feedback(
                    running.url,
                    session_id=f"c{n}",
                    success=n % 3 != 0,
                    text=f"expected {TEMPERATURES[CITIES[n % len(CITIES)]]} C",
                )
            reply = _post(running.url + "/v1/learn")
            assert reply["version"] == 2 and reply["activated"] is True
            assert reply["traces"] == 30
            upstream.clear_records()
            asyncio.run(converse(running.base_url, "after", CITIES[0]))
            after = [r.body for r in upstream.records if r.body.get("tools")]
            state = _get(running.url + "/v1/playbook")
    # The 30 scored conversations (not the 10 unscored ones) taught version 2.
    active = state["active"]
    assert active["version"] == 2 and active["parent"] == 1
    taught = set(re.findall(r"Lesson of trace (tr-[0-9a-f-]+)", active["text"]))
    assert len(taught) == 30
    provenance = active["provenance"]
    assert provenance and all(len(sources) >= 1 for sources in provenance.values())
    # Every bullet's provenance names the trace its lesson came from.
    for line in active["text"].splitlines():
        found = re.search(r"\[([a-z]+-\d+)\].*Lesson of trace (tr-[0-9a-f-]+)", line)
        if found:
            assert provenance[found[1]] == [found[2]]
    # The next conversation's system prompt, at the upstream, carries version 2.
    assert len(after) == 2
    for body in after:
        system = body["messages"][0]
        assert system["role"] == "system"
        assert system["content"].startswith(SYSTEM)
        assert "Lesson of trace" in system["content"]
        for trace in list(taught)[:5]:
            assert trace in system["content"]
    assert gateway.store.count("exchanges") == 82
    assert gateway.store.count("feedback") == 30


def _post(url: str, body: dict[str, Any] | None = None, *, token: str = OPERATOR) -> Any:
    import json
    import urllib.request

    request = urllib.request.Request(
        url,
        data=json.dumps(body or {}).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read())


def _get(url: str, *, token: str = OPERATOR) -> Any:
    import json
    import urllib.request

    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def test_a_streaming_agents_sdk_agent_is_recorded_with_its_tool_calls(tmp_path: Path) -> None:
    from combee.serve.trace_form import conversation

    with serve_in_thread(weather_model) as upstream:
        gateway, app = create_gateway(
            upstream.base_url, settings=serve_settings(store=str(tmp_path / "s"), learn_every=0)
        )
        with GatewayThread(app) as running:

            async def streamed() -> str:
                client = openai.AsyncOpenAI(base_url=running.base_url, api_key="k")
                agent = agents.Agent(
                    name="weather",
                    instructions=SYSTEM,
                    tools=[get_weather],
                    model=agents.OpenAIChatCompletionsModel(model="sim", openai_client=client),
                )
                result = agents.Runner.run_streamed(
                    agent,
                    f"What is the temperature in {CITIES[2]}?",
                    run_config=agents.RunConfig(tracing_disabled=True),
                )
                async for _ in result.stream_events():
                    pass
                await client.close()
                return str(result.final_output)

            answer = asyncio.run(streamed())
        streamed_calls = [r.body.get("stream") for r in upstream.records if r.body.get("tools")]
    assert f"{TEMPERATURES[CITIES[2]]} C" in answer
    assert streamed_calls == [True, True]
    (trace,) = gateway.store.trace_ids("default")
    messages = conversation(gateway.store.exchanges(trace))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    call = messages[2]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    assert messages[3]["tool_call_id"] == call["id"]
    assert f"{TEMPERATURES[CITIES[2]]} C" in messages[4]["content"]
