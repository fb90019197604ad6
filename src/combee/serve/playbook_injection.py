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
        if (
            first is not None
            and first.get("role") in ("system", "developer")
            and isinstance(first.get("content"), str | None)
        ):
            messages[0] = {**first, "content": with_playbook(first.get("content") or "", text)}
        else:
            messages.insert(0, {"role": "system", "content": text})
        sent["messages"] = messages
    return sent
