"""OpenAI Agents SDK agents as users write them: a plain function with ``Runner.run_sync`` on
``async_openai(llm)``, trained through ``combee.train`` against the scripted server; and
``combee.episode_from_agents_run`` turning a ``RunResult`` into an ``Episode``, on the
chat-completions model and on the default Responses model (a scripted ``/v1/responses`` over
HTTP)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")

import openai  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

import combee  # noqa: E402
from combee.errors import ConfigError  # noqa: E402
from combee.llm.openai_compat import async_openai  # noqa: E402
from combee.tasks.agent import Episode, with_playbook  # noqa: E402
from combee.tasks.base import Sample  # noqa: E402
from tests.asgi_thread import serving  # noqa: E402
from tests.tasks.test_agents_sdk import SYSTEM, get_weather  # noqa: E402
from tests.tasks.test_tool_agent import TEMPERATURES  # noqa: E402
from tests.tasks.weather_runs import train_weather, training_episodes  # noqa: E402

UNTRACED = agents.RunConfig(tracing_disabled=True)


def run_sync_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
    """A plain function, as the Agents SDK's quickstart writes one: ``Runner.run_sync``."""
    bot = agents.Agent(
        name="weather",
        instructions=with_playbook(SYSTEM, playbook),
        tools=[get_weather],
        model=agents.OpenAIChatCompletionsModel(model="any", openai_client=async_openai(llm)),
    )
    result = agents.Runner.run_sync(bot, sample.question, run_config=UNTRACED)
    expected = str(TEMPERATURES[sample.meta["city"]])
    return combee.episode_from_agents_run(
        result,
        success=expected in str(result.final_output),
        feedback=f"expected the answer to give {expected} C",
    )


def test_a_plain_function_agent_runs_the_agents_sdk_with_run_sync(tmp_path: Path) -> None:
    summary, bodies = train_weather(run_sync_agent, tmp_path / "r")
    steps = [body["messages"] for body in bodies if body.get("tools")]
    assert summary["test_success_rate"] == 1.0
    assert summary["train_failed_samples"] == 0
    # Each model call of Runner.run_sync was one of Combee's, counted under the agent role.
    assert len(steps) == summary["llm_calls"]["agent"] == 8
    episodes = training_episodes(tmp_path / "r")
    assert len(episodes) == 3 and all(e["success"] for e in episodes)
    for episode in episodes:
        messages = episode["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
        # The system prompt is the agent's instructions, and the conversation before the
        # answer is the one the server received.
        assert messages[0]["content"].startswith(SYSTEM)
        assert messages[:4] in steps


def answer(body: dict[str, Any], bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """The Responses API's reply: a reasoning item and a call of ``get_weather`` for the city
    asked about, then, once the tool's output is in the input, the answer."""
    bodies.append(body)
    last = body["input"][-1]
    if last.get("type") == "function_call_output":
        output: list[dict[str, Any]] = [
            {"type": "reasoning", "id": "rs_2", "summary": []},
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": f"It is {last['output']}.", "annotations": []}
                ],
            },
        ]
    else:
        city = str(body["input"][0]["content"]).rsplit(" ", 1)[-1].rstrip("?")
        output = [
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Look the city up."}],
            },
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_7",
                "name": "get_weather",
                "arguments": json.dumps({"city": city}),
                "status": "completed",
            },
        ]
    return {
        "id": f"resp_{len(bodies)}",
        "object": "response",
        "created_at": 1,
        "model": "scripted",
        "output": output,
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 1,
            "output_tokens": 1,
            "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def test_a_responses_api_run_becomes_an_episode_with_its_instructions() -> None:
    bodies: list[dict[str, Any]] = []

    async def responses(request: Request) -> JSONResponse:
        return JSONResponse(answer(json.loads(await request.body()), bodies))

    app = Starlette(routes=[Route("/v1/responses", responses, methods=["POST"])])
    with serving(app) as base_url:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="not-a-key")
        bot = agents.Agent(
            name="weather",
            instructions=with_playbook(SYSTEM, "Playbook:\n- Name the city."),
            tools=[get_weather],
            model=agents.OpenAIResponsesModel(model="scripted", openai_client=client),
        )
        result = asyncio.run(
            agents.Runner.run(bot, "What is the temperature in Oslo?", run_config=UNTRACED)
        )
    episode = combee.episode_from_agents_run(result, success=True, feedback="right")
    assert len(bodies) == 2
    assert list(episode.messages) == [
        {"role": "system", "content": bodies[0]["instructions"]},
        {"role": "user", "content": "What is the temperature in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_7",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_7", "content": "-3 C"},
        {"role": "assistant", "content": "It is -3 C."},
    ]
    assert bodies[0]["instructions"].endswith("Playbook:\n- Name the city.")
    assert episode.succeeded and episode.feedback == "right"

    # Instructions given as a function cannot be read back: the helper says what to pass.
    bot.instructions = lambda context, agent: SYSTEM
    with pytest.raises(ConfigError, match=r"instructions=\.\.\."):
        combee.episode_from_agents_run(result)
    given = combee.episode_from_agents_run(result, instructions=SYSTEM)
    assert given.messages[0] == {"role": "system", "content": SYSTEM}
    assert given.messages[1:] == episode.messages[1:]
