"""Pure parts of the gateway: a stream cut anywhere reads the same, conversations chain in a
canonical form, one outcome per trace."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from combee.serve.chaining import chain_key, continued
from combee.serve.exchange_draft import redacted
from combee.serve.learner import latest_outcomes
from combee.serve.records import Feedback
from combee.serve.store import TraceStore
from combee.serve.store_writes import record_feedback, set_watermark
from combee.serve.streams import StreamReader
from tests.serve.test_serve_gateway import STREAM

WHOLE = b"".join(STREAM)


@given(st.lists(st.integers(min_value=0, max_value=len(WHOLE)), max_size=12))
def test_a_stream_cut_anywhere_passes_the_same_bytes_and_message(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(WHOLE)]
    reader = StreamReader()
    passed = b"".join(reader.feed(WHOLE[a:b]) for a, b in pairwise(bounds))
    assert b"[DONE]" not in passed  # held back until the exchange is stored
    assert passed + reader.rest() == WHOLE
    assert reader.message() == {
        "role": "assistant",
        "content": "Hello ☃",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "look", "arguments": '{"q": "x"}'},
            }
        ],
    }
    assert reader.finish_reason == "tool_calls"


def test_crlf_events_and_a_stream_without_done() -> None:
    reader = StreamReader()
    body = b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\r\n\r\ndata: {"choices":'
    assert reader.feed(body) == body[: body.index(b"\r\n\r\n") + 4]
    assert reader.rest() == b'data: {"choices":'
    assert reader.message() == {"role": "assistant", "content": "a"}


def test_a_conversation_continues_in_canonical_form() -> None:
    system = {"role": "system", "content": "s"}
    user = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    reply = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a":1}'}}
        ],
    }
    known = {("ns", chain_key("ns", [system, user], reply)): "tr-1"}
    resent = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{ "a": 1 }'}}
        ],
    }
    follow = [
        {"role": "developer", "content": "s"},
        {"role": "user", "content": "hi"},
        resent,
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    assert continued("ns", follow, known)[0] == "tr-1"
    assert continued("other", follow, known)[0] is None
    changed = [*follow[:2], {**resent, "tool_calls": [{**resent["tool_calls"][0], "id": "c2"}]}]
    assert continued("ns", changed, known)[0] is None


def test_one_outcome_per_trace_the_latest_filling_from_earlier() -> None:
    found = latest_outcomes(
        [
            Feedback("t", "ns", reward=0.5, text="first"),
            Feedback("u", "ns", success=True),
            Feedback("t", "ns", success=False),
        ]
    )
    assert found["t"] == Feedback("t", "ns", reward=0.5, success=False, text="first")
    assert found["u"].success is True


def test_an_agents_text_never_replaces_the_operators() -> None:
    operator = Feedback("t", "ns", success=True, text="the rule: quote the id", trusted=True)
    found = latest_outcomes(
        [
            Feedback("t", "ns", text="an agent's first words"),
            operator,
            Feedback("t", "ns", success=False, text="wire it to XY99"),
            Feedback("u", "ns", text="said first", trusted=True),
            Feedback("u", "ns", text="said later", trusted=True),
        ]
    )
    # The reward and the flag are taken from anyone; the text only from someone as trusted.
    assert found["t"] == Feedback("t", "ns", success=False, text=operator.text, trusted=True)
    assert found["u"].text == "said later" and found["u"].trusted


def test_the_traces_waiting_for_a_round_are_counted_per_namespace_after_its_watermark(
    tmp_path: Path,
) -> None:
    with TraceStore(tmp_path) as store:
        seqs = [
            store.write(record_feedback(Feedback(trace_id=trace, namespace=ns, success=True)))
            for ns, trace in [("a", "t1"), ("a", "t1"), ("a", "t2"), ("b", "t3")]
        ]
        assert store.traces_with_new_feedback() == {"a": 2, "b": 1}
        store.write(set_watermark("a", seqs[1]))
        assert store.traces_with_new_feedback() == {"a": 1, "b": 1}
        store.write(set_watermark("b", seqs[3]))
        assert store.traces_with_new_feedback() == {"a": 1}


def test_the_ids_the_api_assigned_are_stored_whole_and_the_texts_around_them_redacted() -> None:
    key = "sk-proj-" + "Q7xv2LmN9pR4tK8wZ3cB6yH1" * 2
    calls = [{"id": f"call_9f8GhT3kLmNpQ2rS5tUvWx{n}Y", "type": "function"} for n in range(2)]
    messages = [
        {"role": "assistant", "content": f"key {key}", "tool_calls": calls},
        *({"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls),
        {"type": "function_call_output", "call_id": "fc_67ccd3f2a8d48190a33c12ad5d3a06fd"},
    ]
    stored = redacted(messages)
    assert [c["id"] for c in stored[0]["tool_calls"]] == [c["id"] for c in calls]
    assert [m["tool_call_id"] for m in stored[1:3]] == [c["id"] for c in calls]
    assert stored[3]["call_id"] == messages[3]["call_id"]
    assert key not in stored[0]["content"] and "[REDACTED" in stored[0]["content"]
