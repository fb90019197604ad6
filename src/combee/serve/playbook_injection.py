"""The one change the gateway makes to a request: the served playbook in its system message
(:func:`combee.tasks.agent.with_playbook`, the rule a task's agent uses)."""

from __future__ import annotations

from typing import Any

from combee.serve.records import PlaybookVersion
from combee.tasks.agent import playbook_section, with_playbook


def with_served_playbook(
    body: dict[str, Any], served: PlaybookVersion | None, model: str
) -> dict[str, Any]:
    """The body to send: the playbook in its system message (``body`` itself when nothing
    changes, so its bytes go on as they came)."""
    text = playbook_section(served.text) if served is not None else ""
    needs_model = not body.get("model") and model
    if not text and not needs_model:
        return body
    sent = dict(body)
    if needs_model:
        sent["model"] = model
    if text:
        messages = list(body["messages"])
        first = messages[0] if messages else None
        content = first.get("content") if isinstance(first, dict) else None
        if first is None or first.get("role") not in ("system", "developer"):
            messages.insert(0, {"role": "system", "content": text})
        elif isinstance(content, list):  # content parts (smolagents): the playbook is one more
            parts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
            lead = "\n\n" if any(str(p.get("text", "")).strip() for p in parts) else ""
            messages[0] = {**first, "content": [*content, {"type": "text", "text": lead + text}]}
        else:  # a string, or none: never a second system message
            messages[0] = {**first, "content": with_playbook(str(content or ""), text)}
        sent["messages"] = messages
    return sent
