"""The store's conversations as files other tools read."""

from __future__ import annotations

import json
import os
from pathlib import Path

from combee.serve.learner import latest_outcomes
from combee.serve.store import TraceStore
from combee.serve.trace_form import chat_record


def export_chat(
    store: str | os.PathLike[str] | TraceStore,
    out: str | os.PathLike[str],
    *,
    namespace: str,
    scored_only: bool = False,
) -> int:
    """Write the conversations of ``namespace`` to ``out`` in the OpenAI chat trace format
    (one ``{"messages", "tools", "reward", "success", "feedback"}`` per line, the outcome being
    the latest reported); returns how many. ``scored_only``: only those with feedback."""
    opened = store if isinstance(store, TraceStore) else TraceStore(store)
    try:
        outcomes = latest_outcomes(f for _, f in opened.feedback_after(namespace, 0))
        ids = opened.trace_ids(namespace)
        written = 0
        target = Path(out)
        partial = target.with_name(target.name + ".partial")
        with partial.open("w", encoding="utf-8") as handle:
            for trace_id in ids:
                outcome = outcomes.get(trace_id)
                if scored_only and outcome is None:
                    continue
                record = chat_record(opened.exchanges(trace_id), outcome)
                if record is not None:
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                    written += 1
        partial.replace(target)
        return written
    finally:
        if opened is not store:
            opened.close()
