"""Training a weather agent (tests/tasks/test_tool_agent.py's task) through ``combee.train``
against the scripted server, and reading back what the run kept."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import combee
from combee.llm import connect
from combee.sim import serve_in_thread
from combee.tasks.agent import with_playbook
from combee.tasks.base import Sample
from tests.tasks.test_tool_agent import SYSTEM, TEMPERATURES, weather_model, weather_task


def opening(sample: Sample, playbook: str) -> list[Any]:
    """The conversation a weather agent starts with."""
    return [
        {"role": "system", "content": with_playbook(SYSTEM, playbook)},
        {"role": "user", "content": sample.question},
    ]


def tool_results(message: Any) -> list[dict[str, Any]]:
    """The ``tool`` messages answering the SDK message's calls of ``get_weather``."""
    return [
        {
            "role": "tool",
            "tool_call_id": call.id,
            "content": f"{TEMPERATURES[json.loads(call.function.arguments)['city']]} C",
        }
        for call in message.tool_calls or []
    ]


def train_weather(
    agent: Any, run_dir: Path, client: str = "openai"
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The run's summary and the body of every request the server received (``client``: the
    run's HTTP client, ``openai`` or ``lean``)."""
    with serve_in_thread(weather_model) as server:
        llm = connect("sim", base_url=server.base_url, client=client)
        try:
            result = combee.train(weather_task(agent), batch_size=3, llm=llm, run_dir=run_dir)
        finally:
            asyncio.run(llm.aclose())
        return dict(result.summary), [r.body for r in server.records]


def training_episodes(run_dir: Path) -> list[dict[str, Any]]:
    """The lines of the run's ``episodes.jsonl``."""
    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]
