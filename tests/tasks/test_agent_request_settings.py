"""An agent's requests through the OpenAI SDK's call shape (``llm.chat.completions.create``, and
the Agents SDK on ``async_openai(llm)``) carry only the sampling settings the agent set: the
scripted server records every request body of a ``combee.train`` run over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

agents = pytest.importorskip("agents")

from combee.llm.openai_compat import async_openai  # noqa: E402
from combee.tasks.agent import Episode, with_playbook  # noqa: E402
from combee.tasks.base import Sample  # noqa: E402
from tests.tasks.test_agents_sdk import SYSTEM, get_weather  # noqa: E402
from tests.tasks.test_tool_agent import TOOLS  # noqa: E402
from tests.tasks.weather_runs import opening, tool_results, train_weather  # noqa: E402

SAMPLING = ("temperature", "max_tokens", "seed")


def sdk_call_agent(settings: dict[str, Any]) -> Any:
    """A plain-function tool loop on ``llm.chat.completions.create`` with ``settings``."""

    def agent(sample: Sample, playbook: str, llm: Any) -> Episode:
        messages = opening(sample, playbook)
        while True:
            reply = llm.chat.completions.create(
                model="any", messages=messages, tools=TOOLS, **settings
            )
            message = reply.choices[0].message
            messages.append(message)
            if not message.tool_calls:
                break
            messages.extend(tool_results(message))
        return Episode(messages=messages, success=True)

    return agent


def agents_sdk_agent(settings: dict[str, Any]) -> Any:
    """An Agents SDK agent whose ``ModelSettings`` are ``settings``."""

    async def agent(sample: Sample, playbook: str, llm: Any) -> Episode:
        bot = agents.Agent(
            name="weather",
            instructions=with_playbook(SYSTEM, playbook),
            tools=[get_weather],
            model=agents.OpenAIChatCompletionsModel(model="any", openai_client=async_openai(llm)),
            model_settings=agents.ModelSettings(**settings),
        )
        config = agents.RunConfig(tracing_disabled=True)
        await agents.Runner.run(bot, sample.question, run_config=config)
        return Episode(messages=[{"role": "user", "content": sample.question}], success=True)

    return agent


def sampling_sent(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The sampling settings of each agent request (the ones that offer tools)."""
    return [{k: b[k] for k in SAMPLING if k in b} for b in bodies if b.get("tools")]


@pytest.mark.parametrize("client", ["openai", "lean"])
def test_an_agent_that_sets_nothing_sends_no_sampling_settings(tmp_path: Path, client: str) -> None:
    summary, bodies = train_weather(sdk_call_agent({}), tmp_path / "r", client)
    assert summary["llm_calls"]["agent"] == 8
    assert sampling_sent(bodies) == [{}] * 8
    # The run's own calls keep the run's settings.
    reflector = [b for b in bodies if "reflector" in json.dumps(b.get("response_format"))]
    assert reflector and all(
        b["temperature"] == 0.0 and b["seed"] == 0 and b["max_tokens"] > 0 for b in reflector
    )


def test_an_agent_that_sets_them_sends_what_it_set(tmp_path: Path) -> None:
    settings = {"temperature": 0.7, "max_completion_tokens": 100, "seed": 7}
    _, bodies = train_weather(sdk_call_agent(settings), tmp_path / "r")
    assert sampling_sent(bodies) == [{"temperature": 0.7, "max_tokens": 100, "seed": 7}] * 8


@pytest.mark.parametrize(
    ("settings", "sent"),
    [({}, {}), ({"temperature": 0.2, "max_tokens": 50}, {"temperature": 0.2, "max_tokens": 50})],
)
def test_an_agents_sdk_agent_sends_its_model_settings_only(
    tmp_path: Path, settings: dict[str, Any], sent: dict[str, Any]
) -> None:
    summary, bodies = train_weather(agents_sdk_agent(settings), tmp_path / "r")
    assert summary["llm_calls"]["agent"] == 8
    assert sampling_sent(bodies) == [sent] * 8
