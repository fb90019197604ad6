"""Reversible redaction: secrets leave as stable placeholders and come back in the replies.

An agent's conversation holds data its tools need: an e-mail address to write to, a password
to set. Redacted for good (``[REDACTED:email]``), the model can only pass the marker on and the
task fails. :class:`Placeholders` replaces each secret-like string (the patterns of
:mod:`combee.llm.redact`) with a placeholder such as ``[[email_1]]``, the same value always
with the same placeholder, and puts the values back where the model's reply uses the
placeholders: in its text and in its tool calls' arguments. The endpoint and the response
cache only ever see the placeholders. One object serves one episode.

The same class gives a run's stored and reflected view (:func:`combee.tasks.agent.hidden_episode`,
:func:`combee.tasks.traces.hidden.hidden_trace`): one object for the whole run, so two
different addresses read as ``[[email_1]]`` and ``[[email_2]]`` everywhere a reflector or a
curator looks, and a wrong recipient can be told from the right one. Text that outlives the
numbering (a playbook's bullet) writes each placeholder as its kind (:func:`general`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from combee.llm.redact import substitute

_PLACEHOLDER = re.compile(r"\[\[([a-z][a-z0-9-]*)_(\d+)\]\]")


class Placeholders:
    """The placeholders of one conversation, both ways."""

    def __init__(self) -> None:
        self._by_value: dict[str, str] = {}
        self._values: dict[str, str] = {}
        self._numbers: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._values)

    def hide(self, text: str, found: Counter[str] | None = None) -> str:
        """``text`` with each secret-like string replaced by its placeholder."""
        if not text:
            return text
        return substitute(text, self._placeholder, found if found is not None else Counter())

    def _placeholder(self, kind: str, value: str) -> str:
        known = self._by_value.get(value)
        if known is not None:
            return known
        self._numbers[kind] += 1
        placeholder = f"[[{kind}_{self._numbers[kind]}]]"
        self._by_value[value] = placeholder
        self._values[placeholder] = value
        return placeholder

    def hide_value(self, value: Any) -> Any:
        """A JSON-like value (a message, a tool call, metadata) with every string hidden."""
        return _strings_mapped(value, self.hide)

    def reveal(self, text: str) -> str:
        """``text`` with the placeholders this object made replaced by their values."""
        if "[[" not in text or not self._values:
            return text
        return _PLACEHOLDER.sub(lambda m: self._values.get(m.group(0), m.group(0)), text)

    def reveal_arguments(self, arguments: str) -> str:
        """A tool call's JSON arguments with the values put back inside their JSON strings."""
        if "[[" not in arguments or not self._values:
            return arguments
        return _PLACEHOLDER.sub(
            lambda m: (
                json.dumps(self._values[m.group(0)])[1:-1]
                if m.group(0) in self._values
                else m.group(0)
            ),
            arguments,
        )

    def reveal_value(self, value: Any) -> Any:
        """A parsed JSON value with the placeholders in its strings replaced."""
        return _strings_mapped(value, self.reveal)


def _strings_mapped(value: Any, change: Callable[[str], str]) -> Any:
    """``value`` (strings, lists, tuples as lists, dicts) with ``change`` applied to each string."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list | tuple):
        return [_strings_mapped(item, change) for item in value]
    if isinstance(value, dict):
        return {key: _strings_mapped(item, change) for key, item in value.items()}
    return value


def general(text: str) -> str:
    """``text`` with each placeholder written as the kind it stands for (``[[email_2]]`` ->
    ``[REDACTED:email]``): for text that outlives the conversation its numbers belong to, such
    as a playbook's bullet, which another episode would otherwise read with its own numbers."""
    if "[[" not in text:
        return text
    return _PLACEHOLDER.sub(lambda m: f"[REDACTED:{m.group(1)}]", text)
