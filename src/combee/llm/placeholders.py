"""Reversible redaction: secrets leave as stable placeholders and come back in the replies.

An agent's conversation holds data its tools need: an e-mail address to write to, a password
to set. Redacted for good (``[REDACTED:email]``), the model can only pass the marker on and the
task fails. :class:`Placeholders` replaces each secret-like string (the patterns of
:mod:`combee.llm.redact`) with a placeholder such as ``[[email_1]]``, the same value always
with the same placeholder, and puts the values back where the model's reply uses the
placeholders: in its text and in its tool calls' arguments. The endpoint and the response
cache only ever see the placeholders. One object serves one episode.
"""

from __future__ import annotations

import json
import re
from collections import Counter
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
        if isinstance(value, str):
            return self.reveal(value)
        if isinstance(value, list):
            return [self.reveal_value(item) for item in value]
        if isinstance(value, dict):
            return {key: self.reveal_value(item) for key, item in value.items()}
        return value
