"""A smolagents ToolCallingAgent through the gateway: it writes its earlier tool calls back as
assistant text and their results as user messages (not ``tool_calls`` and ``tool`` messages),
and its system message's content is a list of parts. One run is one trace, and every request
reaches the upstream with one system message, the playbook in it; a second run of the same task
is a trace of its own."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("smolagents")

from smolagents import OpenAIServerModel, ToolCallingAgent, tool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from combee.serve import serve_settings
from combee.serve.records import PlaybookVersion
from combee.serve.running import GatewayThread, create_gateway
from combee.serve.store_writes import add_version

RULE = "Check the weather of every city named."
CITIES = ("Paris", "Lyon")


class ToolCallingUpstream:
    """Calls ``weather`` for each city in turn, then answers with ``final_answer``; keeps every
    request it received."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._count = 0
        self._lock = threading.Lock()
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            self._count += 1
            call_id = f"call_{self._count:04d}"
        step = sum(m["role"] == "assistant" for m in body["messages"])
        if step < len(CITIES):
            name, arguments = "weather", {"city": CITIES[step]}
        else:
            name, arguments = "final_answer", {"answer": "sunny in both"}
        call = {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
        return JSONResponse(
            {
                "id": f"chatcmpl-{call_id}",
                "object": "chat.completion",
                "created": 1,
                "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )


@tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: the city's name
    """
    return f"sunny in {city}"


def run_agent(base_url: str) -> Any:
    model = OpenAIServerModel(model_id="m", api_base=base_url, api_key="agent")
    agent = ToolCallingAgent(tools=[weather], model=model, max_steps=5, verbosity_level=0)
    return agent.run("What is the weather in Paris and in Lyon?")


def test_a_smolagents_run_is_one_trace_with_one_system_message(tmp_path: Path) -> None:
    fake = ToolCallingUpstream()
    with GatewayThread(fake.app) as upstream:
        gate, app = create_gateway(
            upstream.base_url,
            settings=serve_settings(store=str(tmp_path / "store"), learn_every=0),
        )
        text = f"## Strategies and rules\n[str-00001] helpful=0 harmful=0 :: {RULE}\n"
        gate.store.write(
            add_version(
                PlaybookVersion("default", 0, text, 0.0, "active", traces=["t"]), activate=True
            )
        )
        with GatewayThread(app) as running:
            first = run_agent(running.base_url)
            second = run_agent(running.base_url)
    assert first == second == "sunny in both"
    assert len(fake.requests) == 6  # two tool calls and the answer, twice
    # The agent wrote its earlier calls back as text, not as tool_calls (what this test is of).
    resent = fake.requests[1]["messages"]
    assert [m["role"] for m in resent] == ["system", "user", "assistant", "user"]
    assert "tool_calls" not in resent[2] and "call_0001" in json.dumps(resent[2]["content"])
    for body in fake.requests:
        systems = [m for m in body["messages"] if m["role"] in ("system", "developer")]
        assert len(systems) == 1
        assert RULE in json.dumps(systems[0]["content"])
    traces = gate.store.trace_ids("default")
    assert len(traces) == 2  # one per run
    assert [len(gate.store.exchanges(trace)) for trace in traces] == [3, 3]
