"""Reversible redaction: stable placeholders out, the values back in replies and tool-call
arguments."""

from __future__ import annotations

import json
from collections import Counter

from combee.llm.placeholders import Placeholders


def test_the_same_value_gets_the_same_placeholder_and_comes_back() -> None:
    vault = Placeholders()
    found: Counter[str] = Counter()
    first = vault.hide("Write to ana@example.com and bob@example.org.", found)
    again = vault.hide("ana@example.com said hi", found)
    assert first == "Write to [[email_1]] and [[email_2]]."
    assert again == "[[email_1]] said hi"
    assert found == Counter({"email": 3})
    assert vault.reveal(first) == "Write to ana@example.com and bob@example.org."
    assert vault.reveal("[[email_9]] is not ours") == "[[email_9]] is not ours"


def test_values_come_back_inside_json_arguments_escaped() -> None:
    vault = Placeholders()
    key = '-----BEGIN PRIVATE KEY-----\nMIIEv"Q==\n-----END PRIVATE KEY-----'
    assert vault.hide(f"the key: {key}") == "the key: [[private-key_1]]"
    arguments = json.dumps({"key": "[[private-key_1]]", "keys": ["[[private-key_1]]"]})
    value = json.loads(vault.reveal_arguments(arguments))  # newlines and quotes escaped
    assert value == {"key": key, "keys": [key]}
    assert vault.reveal_value({"a": ["[[private-key_1]]", 3]}) == {"a": [key, 3]}


def test_two_conversations_number_their_own_placeholders() -> None:
    one, two = Placeholders(), Placeholders()
    assert one.hide("x@example.com") == two.hide("y@example.com") == "[[email_1]]"
    assert one.reveal("[[email_1]]") == "x@example.com"
    assert two.reveal("[[email_1]]") == "y@example.com"
