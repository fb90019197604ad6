"""A trace as a reflector reads it: each secret and address as a run-wide placeholder."""

from __future__ import annotations

import dataclasses

from combee.llm.placeholders import Placeholders
from combee.tasks.traces.model import ToolCall, Trace, TraceMessage


def hidden_trace(trace: Trace, placeholders: Placeholders) -> Trace:
    """``trace`` with every secret-like string of its messages and feedback replaced by its
    placeholder in ``placeholders`` (one object per run: the same value, the same placeholder,
    in every trace)."""
    return dataclasses.replace(
        trace,
        messages=[_hidden_message(m, placeholders) for m in trace.messages],
        outcome=dataclasses.replace(
            trace.outcome,
            feedback=placeholders.hide(trace.outcome.feedback),
            untrusted_feedback=placeholders.hide(trace.outcome.untrusted_feedback),
        ),
    )


def _hidden_message(message: TraceMessage, placeholders: Placeholders) -> TraceMessage:
    return dataclasses.replace(
        message,
        content=placeholders.hide(message.content),
        tool_calls=[
            ToolCall(call.name, placeholders.hide_value(call.arguments), call.id)
            for call in message.tool_calls
        ],
    )
