"""The one change the gateway makes to a request: the served playbook in its system message
(:func:`combee.tasks.agent.with_playbook`, the rule a task's agent uses), or, for the Responses
API, in its ``instructions``, which are that system message."""

from __future__ import annotations

from typing import Any

from combee.serve.records import PlaybookVersion
from combee.tasks.agent import playbook_section, with_playbook

_SYSTEM = ("system", "developer")


def with_served_playbook(
    body: dict[str, Any], served: PlaybookVersion | None, model: str
) -> dict[str, Any]:
    """The body to send: the playbook in its system message (``body`` itself when nothing
    changes, so its bytes go on as they came)."""
    text = playbook_section(served.text) if served is not None else ""
    sent = _with_model(body, model)
    if text:
        messages = list(body["messages"])
        # The request's own system message, wherever it is: never a second one.
        at = next((i for i, m in enumerate(messages) if m.get("role") in _SYSTEM), None)
        if at is None:
            messages.insert(0, {"role": "system", "content": text})
        else:
            messages[at] = _with_section(messages[at], text)
        sent = {**sent, "messages": messages}
    return sent


def _with_section(system: dict[str, Any], text: str) -> dict[str, Any]:
    """The system message ``system`` with the playbook section ``text`` after its own text."""
    content = system.get("content")
    if isinstance(content, list):  # content parts (smolagents): the playbook is one more
        parts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
        lead = "\n\n" if any(str(p.get("text", "")).strip() for p in parts) else ""
        return {**system, "content": [*content, {"type": "text", "text": lead + text}]}
    return {**system, "content": with_playbook(str(content or ""), text)}  # a string, or none


def with_served_instructions(
    body: dict[str, Any], served: PlaybookVersion | None, model: str
) -> dict[str, Any]:
    """A Responses API body to send: the playbook after its ``instructions`` as after a system
    message's text, or as the instructions when it has none (``body`` itself when nothing
    changes)."""
    text = playbook_section(served.text) if served is not None else ""
    sent = _with_model(body, model)
    instructions = body.get("instructions")
    if text and (instructions is None or isinstance(instructions, str)):
        sent = {**sent, "instructions": with_playbook(instructions or "", text)}
    return sent


def _with_model(body: dict[str, Any], model: str) -> dict[str, Any]:
    """``body`` with ``model`` when it names none (``body`` itself when it does)."""
    return {**body, "model": model} if model and not body.get("model") else body
