"""Linking by structure: a request continues an exchange whose reply called a tool when it begins
with that exchange's messages and writes the call again in any form (native, JSON, a Python repr,
prose); not when the call is absent, nor when only the opening is the same."""

from __future__ import annotations

import json
from typing import Any

import pytest

from combee.serve.chaining import Chain, continued
from combee.serve.resent_calls import called_tools

SYSTEM = {"role": "system", "content": "You plan trips."}
TASK = {"role": "user", "content": "Weather in Paris?"}
CALL = {
    "id": "call_Zx81",
    "type": "function",
    "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris", "days": 2})},
}
REPLY = {"role": "assistant", "content": None, "tool_calls": [CALL]}


def trace_of(messages: list[dict[str, Any]], reply: dict[str, Any] = REPLY) -> str | None:
    chain = Chain("default")
    for message in (SYSTEM, TASK):
        chain.add(message)
    resent = {("default", chain.key()): ("tr-1", called_tools(reply))}
    found, _ = continued("default", messages, {}, resent)
    return found


@pytest.mark.parametrize(
    "written",
    [
        {"role": "assistant", "content": "Calling tools:\n" + repr([CALL])},
        {"role": "assistant", "content": [{"type": "text", "text": json.dumps([CALL])}]},
        {"role": "assistant", "content": "I ran get_weather for Paris over 2 days."},
        {"role": "assistant", "content": None, "tool_calls": [{**CALL, "id": "renamed"}]},
    ],
)
def test_a_call_written_again_in_any_form_continues_the_trace(written: dict[str, Any]) -> None:
    observation = {"role": "user", "content": "Result: sunny"}
    assert trace_of([SYSTEM, TASK, written, observation]) == "tr-1"


def test_no_link_without_the_call_or_without_the_whole_request() -> None:
    other_call = {"role": "assistant", "content": "I ran get_news for Paris."}
    assert trace_of([SYSTEM, TASK, other_call, {"role": "user", "content": "ok"}]) is None
    assert trace_of([SYSTEM, TASK]) is None  # the same opening again: a new conversation
    later_task = {"role": "user", "content": "Weather in Rome?"}
    written = {"role": "assistant", "content": repr([CALL])}
    assert trace_of([SYSTEM, later_task, written]) is None  # not the earlier request
    plain = {"role": "assistant", "content": "It is sunny."}  # a reply without a tool call
    assert trace_of([SYSTEM, TASK, written], reply=plain) is None
