"""A Responses API exchange read in the chat form: its input items, its output, its stream, and
where the playbook goes in its instructions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from combee.serve.chaining import chain_key, continued
from combee.serve.http_errors import BadRequest
from combee.serve.playbook_injection import with_served_instructions
from combee.serve.records import PlaybookVersion
from combee.serve.responses_form import chat_tools, output_message, request_messages
from combee.serve.responses_stream import ResponsesStreamReader

SERVED = PlaybookVersion("default", 2, "## s\n[s-00001] :: Quote the city.", 0.0, "active")
CALLS = [
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Two."}]},
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": 1}'},
    {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
]


def test_input_items_read_as_chat_messages() -> None:
    body = {
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": "plain"},
            {"type": "message", "role": "developer",
             "content": [{"type": "input_text", "text": "d"}]},
            {"role": "user", "content": [
                {"type": "input_text", "text": "see"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA"},
            ]},
            *CALLS,
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
            {"type": "function_call_output", "call_id": "c2",
             "output": [{"type": "input_text", "text": "two"}]},
            {"type": "custom_tool_call", "call_id": "c3", "name": "sh", "input": "ls"},
            {"type": "custom_tool_call_output", "call_id": "c3", "output": "a.txt"},
            {"type": "item_reference", "id": "msg_0"},
        ],
    }  # fmt: skip
    messages = request_messages(body)
    assert [m["role"] for m in messages] == [
        "system", "user", "developer", "user", "assistant", "tool", "tool", "assistant", "tool",
    ]  # fmt: skip
    assert messages[0]["content"] == "Be brief." and messages[2]["content"] == "d"
    assert messages[3]["content"] == [
        {"type": "text", "text": "see"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
    ]
    assistant = messages[4]  # its text and both calls of the same turn: one message
    assert assistant["content"] == "Two."
    assert [(c["id"], c["function"]["name"]) for c in assistant["tool_calls"]] == [
        ("c1", "f"),
        ("c2", "g"),
    ]
    assert messages[5] == {"role": "tool", "tool_call_id": "c1", "content": "one"}
    assert messages[6]["content"] == "two"
    assert messages[7]["tool_calls"][0]["function"] == {"name": "sh", "arguments": "ls"}
    assert request_messages({"input": "hi"}) == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("body", [[], {"input": 3}, {"input": ["x"]}, {}])
def test_a_body_out_of_form_is_refused(body: Any) -> None:
    with pytest.raises(BadRequest, match="input"):
        request_messages(body)


def test_the_reply_is_one_assistant_message_that_the_next_request_continues() -> None:
    first = {"instructions": "S", "input": "q"}
    reply = output_message({"output": CALLS})
    assert reply == {
        "role": "assistant",
        "content": "Two.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
        ],
    }
    key = chain_key("ns", request_messages(first), reply)
    # The agent resends the output items (arguments re-encoded), then the results.
    resent = [{**item, "arguments": json.dumps(json.loads(item["arguments"]))} if "arguments"
              in item else item for item in CALLS]  # fmt: skip
    second = {
        "instructions": "S",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "q"}]},
            *resent,
            {"type": "function_call_output", "call_id": "c1", "output": "1"},
        ],
    }
    found, _ = continued("ns", request_messages(second), {("ns", key): "tr-1"})
    assert found == "tr-1"
    assert output_message({"output": []}) == {"role": "assistant", "content": ""}
    assert output_message({"error": "x"}) is None


def test_function_tools_in_the_chat_form() -> None:
    tools = [
        {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True},
        {"type": "web_search"},
    ]
    function = {"name": "f", "parameters": {"type": "object"}, "strict": True}
    assert chat_tools(tools) == [{"type": "function", "function": function}, {"type": "web_search"}]


def test_the_playbook_goes_after_the_instructions() -> None:
    with_own = with_served_instructions({"input": "q", "instructions": "Be brief."}, SERVED, "m")
    assert with_own["instructions"].startswith("Be brief.\n\n")
    assert with_own["instructions"].endswith("Quote the city.") and with_own["model"] == "m"
    alone = with_served_instructions({"model": "x", "input": "q"}, SERVED, "m")
    assert "Quote the city." in alone["instructions"] and alone["model"] == "x"
    body = {"model": "x", "input": "q", "instructions": "S"}
    assert with_served_instructions(body, None, "m") is body


def _event(kind: str, **fields: Any) -> bytes:
    return f"event: {kind}\r\ndata: {json.dumps({'type': kind, **fields})}\r\n\r\n".encode()


def test_a_stream_passes_on_every_byte_and_holds_its_end_until_stored() -> None:
    item = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}
    events = [
        _event("response.created", response={"output": []}),
        _event("response.output_text.delta", delta="Hel"),
        _event("response.output_item.done", output_index=0, item=item),
        _event("response.completed", response={"output": [CALLS[1], item]}),
    ]
    stream = b"".join(events)
    reader = ResponsesStreamReader()
    passed = b"".join(reader.feed(stream[n : n + 5]) for n in range(0, len(stream), 5))
    assert passed == b"".join(events[:3])  # the terminal event is held back
    assert reader.rest() == events[3]
    message = reader.message()
    assert message["content"] == "Two." and message["tool_calls"][0]["id"] == "c1"
    broken = ResponsesStreamReader()  # no terminal event: the items finished, else the text
    broken.feed(b"".join(events[:2]))
    assert broken.message() == {"role": "assistant", "content": "Hel"}
    broken.feed(events[2])
    assert broken.message()["tool_calls"][0]["function"]["name"] == "f"
