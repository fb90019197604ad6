"""The Responses API through the learning gateway, with the OpenAI Agents SDK in its default mode
(an ``OpenAIResponsesModel`` on an ``AsyncOpenAI`` client whose base URL is the gateway) against
a scripted upstream that speaks the Responses API over HTTP. Each agent run's two model calls are
one stored conversation in the chat form, learned from like a chat one; the next run's
``instructions``, as the upstream received them, carry the new playbook version."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")
pytest.importorskip("starlette")

import httpx  # noqa: E402
import openai  # noqa: E402

from combee.llm import Endpoint  # noqa: E402
from combee.serve import feedback, serve_settings  # noqa: E402
from combee.serve.running import GatewayThread, create_gateway  # noqa: E402
from combee.serve.trace_form import conversation  # noqa: E402
from combee.sim import serve_in_thread  # noqa: E402
from combee.tasks.agent import playbook_section, with_playbook  # noqa: E402
from tests.serve.responses_upstream import ResponsesUpstream  # noqa: E402
from tests.serve.test_serve_agents import CITIES, OPERATOR, SYSTEM, _get, _post  # noqa: E402
from tests.tasks.test_tool_agent import TEMPERATURES, weather_model  # noqa: E402

RUN = agents.RunConfig(tracing_disabled=True)


@agents.function_tool
def get_weather(city: str) -> str:
    """The temperature in a city, in degrees Celsius.

    Args:
        city: The city's name.
    """
    return f"{TEMPERATURES.get(city, 'unknown')} C"


class SeenHeaders:
    """The gateway's headers on each reply the agent's client received."""

    def __init__(self) -> None:
        self.replies: list[dict[str, str]] = []

    async def __call__(self, response: httpx.Response) -> None:
        self.replies.append(dict(response.headers))

    def traces(self) -> list[str]:
        return [reply["x-combee-trace"] for reply in self.replies]

    def versions(self) -> list[str]:
        return [reply.get("x-combee-playbook-version", "") for reply in self.replies]


def default_agent(base_url: str, seen: SeenHeaders) -> tuple[Any, openai.AsyncOpenAI]:
    """The user's agent, unchanged but for its client's base URL: the SDK's default model class,
    which calls ``/v1/responses``."""
    client = openai.AsyncOpenAI(
        base_url=base_url,
        api_key="agent-key",
        http_client=httpx.AsyncClient(event_hooks={"response": [seen]}),
    )
    agent = agents.Agent(
        name="weather",
        instructions=SYSTEM,
        tools=[get_weather],
        model=agents.OpenAIResponsesModel(model="sim", openai_client=client),
    )
    return agent, client


async def run_once(base_url: str, city: str, seen: SeenHeaders) -> str:
    agent, client = default_agent(base_url, seen)
    try:
        result = await agents.Runner.run(
            agent, f"What is the temperature in {city}?", run_config=RUN
        )
    finally:
        await client.close()
    return str(result.final_output)


def test_a_default_mode_agents_sdk_agent_learns_through_the_responses_route(
    tmp_path: Path,
) -> None:
    scripted = ResponsesUpstream()
    with serve_in_thread(weather_model) as learner_llm, GatewayThread(scripted.app()) as upstream:
        gateway, app = create_gateway(
            upstream.base_url,
            settings=serve_settings(store=str(tmp_path / "store"), learn_every=0),
            learner_llm=Endpoint("sim", base_url=learner_llm.base_url),
            learn_settings={"batch_size": 4, "strategy": "combee"},
            operator_token=OPERATOR,
        )
        with GatewayThread(app) as running:
            seen = [SeenHeaders() for _ in range(4)]

            async def first_wave() -> list[str]:
                runs = (run_once(running.base_url, CITIES[n], seen[n]) for n in range(4))
                return await asyncio.gather(*runs)

            answers = asyncio.run(first_wave())
            before = [a.json() for a in scripted.calls("/v1/responses")]
            traces = [set(s.traces()) for s in seen]
            for trace in traces:
                feedback(
                    running.url, trace_id=next(iter(trace)), success=True, text="it used the tool"
                )
            learned = _post(running.url + "/v1/learn")
            active = _get(running.url + "/v1/playbook")["active"]
            scripted.arrivals.clear()
            after_seen = SeenHeaders()
            answer = asyncio.run(run_once(running.base_url, CITIES[0], after_seen))
            after = [a.json() for a in scripted.calls("/v1/responses")]
            stored = {
                t: conversation(gateway.store.exchanges(t))
                for t in gateway.store.trace_ids("default")
            }
    assert all(f"{TEMPERATURES[CITIES[n]]} C" in answers[n] for n in range(4))
    # Two model calls per run, both in one trace (prefix chaining), a trace per run.
    assert len(before) == 8 and all(len(s.replies) == 2 for s in seen)
    assert all(len(trace) == 1 for trace in traces)
    assert len(set.union(*traces)) == 4
    # Version 1 (the empty starting playbook) adds nothing to the agent's instructions.
    assert all(body["instructions"] == SYSTEM for body in before)
    for trace in set.union(*traces):
        messages = stored[trace]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
        assert messages[0]["content"] == SYSTEM
        call = messages[2]["tool_calls"][0]
        assert call["function"]["name"] == "get_weather"
        assert messages[3]["tool_call_id"] == call["id"]
        assert " C there." in messages[4]["content"]
    assert learned["version"] == 2 and learned["activated"] is True and learned["traces"] == 4
    assert "Lesson of trace" in active["text"]
    # The next run: its instructions at the upstream carry version 2, and its replies say so.
    assert f"{TEMPERATURES[CITIES[0]]} C" in answer
    expected = with_playbook(SYSTEM, playbook_section(active["text"]))
    assert len(after) == 2 and all(body["instructions"] == expected for body in after)
    assert after_seen.versions() == ["2", "2"]


def test_a_streamed_default_mode_run_is_one_stored_trace(tmp_path: Path) -> None:
    scripted = ResponsesUpstream()
    with GatewayThread(scripted.app()) as upstream:
        gateway, app = create_gateway(
            upstream.base_url,
            settings=serve_settings(store=str(tmp_path / "s"), learn_every=0),
        )
        with GatewayThread(app) as running:
            seen = SeenHeaders()

            async def streamed() -> tuple[str, list[str]]:
                agent, client = default_agent(running.base_url, seen)
                result = agents.Runner.run_streamed(
                    agent, f"What is the temperature in {CITIES[2]}?", run_config=RUN
                )
                kinds = [event.type async for event in result.stream_events()]
                await client.close()
                return str(result.final_output), kinds

            answer, kinds = asyncio.run(streamed())
        streamed_calls = [a.json().get("stream") for a in scripted.calls("/v1/responses")]
    assert f"{TEMPERATURES[CITIES[2]]} C" in answer
    assert "raw_response_event" in kinds
    assert streamed_calls == [True, True]
    assert len(set(seen.traces())) == 1 and seen.versions() == ["1", "1"]
    (trace,) = gateway.store.trace_ids("default")
    assert seen.traces()[0] == trace
    exchanges = gateway.store.exchanges(trace)
    assert [e.status for e in exchanges] == [200, 200]
    messages = conversation(exchanges)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    call = messages[2]["tool_calls"][0]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": CITIES[2]}
    assert messages[3]["tool_call_id"] == call["id"]
    assert messages[4]["content"] == f"It is {TEMPERATURES[CITIES[2]]} C there."
    assert exchanges[0].tools[0]["function"]["name"] == "get_weather"


def test_instructions_without_the_agents_own_and_with_the_playbook_off(tmp_path: Path) -> None:
    """A string input and no instructions: the playbook is the instructions. With
    ``X-Combee-Playbook: off`` the body goes upstream byte for byte."""
    playbook = tmp_path / "playbook.md"
    playbook.write_text("## strategies\n[str-00001] helpful=0 harmful=0 :: Quote the city.\n")
    scripted = ResponsesUpstream()
    with GatewayThread(scripted.app()) as upstream:
        gateway, app = create_gateway(
            upstream.base_url,
            settings=serve_settings(
                store=str(tmp_path / "s"), learn_every=0, playbook=str(playbook)
            ),
        )
        with GatewayThread(app) as running:
            client = openai.OpenAI(base_url=running.base_url, api_key="k")
            served = client.responses.with_raw_response.create(
                model="sim", input="What is the temperature in Paris?"
            )
            plain = client.responses.with_raw_response.create(
                model="sim",
                input="What is the temperature in Paris?",
                instructions="Be brief.",
                extra_headers={"X-Combee-Playbook": "off"},
            )
            client.close()
        first, second = scripted.calls("/v1/responses")
    assert first.json()["instructions"] == playbook_section(playbook.read_text())
    assert served.headers["x-combee-playbook-version"] == "1"
    assert served.parse().output[0].type == "function_call"
    assert second.json()["instructions"] == "Be brief."
    assert second.body == plain.http_request.content
    assert "x-combee-playbook-version" not in plain.headers
    stored = [
        conversation([e])
        for t in gateway.store.trace_ids("default")
        for e in gateway.store.exchanges(t)
    ]
    assert [m["role"] for m in stored[0]] == ["user", "assistant"]  # the agent's, no playbook
    assert [m["role"] for m in stored[1]] == ["system", "user", "assistant"]
    assert stored[1][0]["content"] == "Be brief."
