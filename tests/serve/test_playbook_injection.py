"""Where the gateway puts the served playbook: in the request's own system message, whatever
form its content takes; never a second system message."""

from __future__ import annotations

from typing import Any

from combee.serve.playbook_injection import with_served_playbook
from combee.serve.records import PlaybookVersion

SERVED = PlaybookVersion(
    "default", 2, "## strategies\n[str-00001] :: Quote the invoice id.", 0.0, "active"
)


def sent(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    body = {"model": "m", "messages": messages}
    result: list[dict[str, Any]] = with_served_playbook(body, SERVED, "m")["messages"]
    return result


def test_content_parts_get_the_playbook_as_one_more_part() -> None:
    system = {"role": "system", "content": [{"type": "text", "text": "You are a code agent."}]}
    messages = sent([system, {"role": "user", "content": "task"}])
    assert [m["role"] for m in messages] == ["system", "user"]
    parts = messages[0]["content"]
    assert parts[0] == system["content"][0] and len(parts) == 2
    assert parts[1]["type"] == "text" and "Quote the invoice id." in parts[1]["text"]
    assert parts[1]["text"].startswith("\n\n")


def test_a_string_a_missing_content_and_no_system_message() -> None:
    as_string = sent(
        [{"role": "developer", "content": "Be brief."}, {"role": "user", "content": "q"}]
    )
    assert [m["role"] for m in as_string] == ["developer", "user"]
    assert as_string[0]["content"].startswith("Be brief.\n\n")
    empty = sent([{"role": "system", "content": None}, {"role": "user", "content": "q"}])
    assert len(empty) == 2 and "Quote the invoice id." in empty[0]["content"]
    none = sent([{"role": "user", "content": "q"}])
    assert [m["role"] for m in none] == ["system", "user"]


def test_a_system_message_after_other_messages_is_the_one_amended() -> None:
    messages = sent(
        [
            {"role": "user", "content": "earlier turn"},
            {"role": "system", "content": "Answer in French."},
            {"role": "user", "content": "q"},
        ]
    )
    assert [m["role"] for m in messages] == ["user", "system", "user"]
    assert messages[1]["content"].startswith("Answer in French.\n\n")
    assert "Quote the invoice id." in messages[1]["content"]
