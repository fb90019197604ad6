"""What the client redacts on the way out and on the way back: every message's text and
tool-call arguments, every reply's text and tool calls (see :mod:`combee.llm.redact`), as
``[REDACTED:<kind>]`` or, for one conversation, as reversible :class:`Placeholders`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from combee.llm.messages import map_call_arguments, map_texts
from combee.llm.placeholders import Placeholders
from combee.llm.redact import redact
from combee.llm.types import Completion


class Redaction:
    """Redaction on (``on``) or off, and the replacements made so far by kind (``counts``)."""

    def __init__(self, on: bool) -> None:
        self.on = on
        self.counts: Counter[str] = Counter()

    def _hider(self, placeholders: Placeholders | None) -> Callable[[str], str]:
        if placeholders is None:
            return lambda text: redact(text, self.counts)
        return lambda text: placeholders.hide(text, self.counts)

    def messages(
        self, messages: tuple[dict[str, Any], ...], placeholders: Placeholders | None
    ) -> tuple[dict[str, Any], ...]:
        if not self.on:
            return messages
        hide = self._hider(placeholders)
        return tuple(map_texts(m, hide) for m in messages)

    def reply(self, completion: Completion, placeholders: Placeholders | None) -> Completion:
        if not self.on:
            return completion
        hide = self._hider(placeholders)
        text = hide(completion.text)
        calls = tuple(map_call_arguments(call, hide) for call in completion.tool_calls)
        if text == completion.text and calls == completion.tool_calls:
            return completion
        return replace(completion, text=text, tool_calls=calls)


def revealed(completion: Completion, placeholders: Placeholders | None) -> Completion:
    """The reply with ``placeholders``' values put back (in its text and tool calls)."""
    if placeholders is None or not len(placeholders):
        return completion
    calls = tuple(
        map_call_arguments(call, placeholders.reveal_arguments) for call in completion.tool_calls
    )
    return replace(completion, text=placeholders.reveal(completion.text), tool_calls=calls)


def reply_text(completion: Completion) -> str:
    """The reply's text and its tool calls' arguments."""
    if not completion.tool_calls:
        return completion.text
    arguments = (call["function"]["arguments"] for call in completion.tool_calls)
    return "\n".join((completion.text, *arguments))
