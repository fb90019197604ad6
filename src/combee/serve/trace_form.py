"""A stored conversation as a :class:`combee.tasks.traces.Trace` and as an OpenAI chat record.

A conversation's exchanges each carry the whole history the agent sent; the conversation is the
longest of them plus its reply. An exchange that does not extend the one before (a session whose
agent started over) adds only the messages the two do not share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from combee.serve.chaining import canonical
from combee.serve.records import Exchange, Feedback
from combee.tasks.traces.chat import MessageError, chat_messages
from combee.tasks.traces.model import Outcome, Trace


def conversation(exchanges: Sequence[Exchange]) -> list[Mapping[str, Any]]:
    """The messages of a trace's exchanges (each reply included), in order."""
    messages: list[Mapping[str, Any]] = []
    keys: list[bytes] = []
    for exchange in exchanges:
        if exchange.reply is None:
            continue
        turns = [*exchange.messages, exchange.reply]
        turn_keys = [canonical(m) for m in turns]
        shared = 0
        while shared < min(len(keys), len(turn_keys)) and keys[shared] == turn_keys[shared]:
            shared += 1
        if shared == len(keys):
            messages, keys = list(turns), turn_keys
        else:
            messages += turns[shared:]
            keys += turn_keys[shared:]
    return messages


def trace_of(exchanges: Sequence[Exchange], feedback: Feedback | None) -> Trace | None:
    """The trace of ``exchanges`` with the outcome ``feedback`` reports (None: no reply): its
    text is the checker's feedback when trusted, else the outcome's untrusted feedback, which
    the reflector is shown as data."""
    messages = conversation(exchanges)
    if not messages:
        return None
    try:
        parsed = chat_messages(list(messages))
    except MessageError:
        return None
    first = exchanges[0]
    outcome = Outcome()
    if feedback is not None:
        outcome = Outcome(
            success=feedback.success,
            reward=feedback.reward,
            feedback=feedback.text if feedback.trusted else "",
            untrusted_feedback="" if feedback.trusted else feedback.text,
        )
    return Trace(
        id=first.trace_id,
        task_id=first.task_id or first.trace_id,
        messages=parsed,
        outcome=outcome,
        source=f"gateway:{first.namespace}",
        meta={"namespace": first.namespace, "exchanges": len(exchanges)},
    )


def chat_record(exchanges: Sequence[Exchange], feedback: Feedback | None) -> dict[str, Any] | None:
    """The trace as one line of the OpenAI chat trace format (``combee learn`` reads it);
    untrusted feedback text goes to ``metadata.untrusted_feedback``, which no reader takes as
    the outcome's feedback."""
    messages = conversation(exchanges)
    if not messages:
        return None
    first = exchanges[0]
    record: dict[str, Any] = {
        "id": first.trace_id,
        "task_id": first.task_id or first.trace_id,
        "messages": messages,
    }
    tools = next((e.tools for e in reversed(exchanges) if e.tools), None)
    if tools:
        record["tools"] = list(tools)
    if feedback is not None:
        if feedback.reward is not None:
            record["reward"] = feedback.reward
        if feedback.success is not None:
            record["success"] = feedback.success
        if feedback.text and feedback.trusted:
            record["feedback"] = feedback.text
    record["metadata"] = {"namespace": first.namespace, "session_id": first.session_id}
    if feedback is not None and feedback.text and not feedback.trusted:
        # Not "feedback", which a reader takes as the checker's: what an agent sent is data.
        record["metadata"]["untrusted_feedback"] = feedback.text
    return record
