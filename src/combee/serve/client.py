"""Outcomes reported to a running gateway from Python: :func:`feedback`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from combee.errors import CombeeError


def feedback(
    gateway: str,
    *,
    trace_id: str | None = None,
    session_id: str | None = None,
    reward: float | None = None,
    success: bool | None = None,
    text: str = "",
    agent: str | None = None,
    token: str | None = None,
    timeout_s: float = 30.0,
) -> dict[str, Any]:
    """Report how a conversation ended to the gateway at ``gateway`` (``http://host:port``,
    with or without ``/v1``): ``trace_id`` (the ``X-Combee-Trace`` header of any of its
    replies) or ``session_id``, and a ``reward``, a ``success`` flag and/or feedback ``text``.
    ``agent``: the namespace, when the agent uses one. ``token``: the agent token, or the
    operator token, with which ``text`` is trusted as a checker's (its answer's
    ``text_trusted`` says which). Returns the gateway's answer; a refused report raises
    :class:`combee.errors.CombeeError` with the gateway's reason."""
    base = gateway.rstrip("/").removesuffix("/v1")
    if agent:
        base = f"{base}/agents/{agent}"
    body: dict[str, Any] = {"feedback": text} if text else {}
    for name, value in (
        ("trace_id", trace_id),
        ("session_id", session_id),
        ("reward", reward),
        ("success", success),
    ):
        if value is not None:
            body[name] = value
    request = urllib.request.Request(
        f"{base}/v1/feedback",
        data=json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Bearer {token}"} if token else {}),
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            answer: dict[str, Any] = json.loads(reply.read())
            return answer
    except urllib.error.HTTPError as refused:
        try:
            reason = json.loads(refused.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            reason = refused.reason
        raise CombeeError(f"the gateway refused the feedback ({refused.code}): {reason}") from None
    except (urllib.error.URLError, OSError) as problem:
        raise CombeeError(f"the gateway at {base} did not answer: {problem}") from None
