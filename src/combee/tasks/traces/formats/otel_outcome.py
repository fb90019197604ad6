"""The outcome and task id of an OpenTelemetry trace (see
:mod:`combee.tasks.traces.formats.otel`): ``combee.*`` attributes, else the first
``gen_ai.evaluation.result``; the task id from ``combee.task_id``, ``session.id`` or
``gen_ai.conversation.id``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from combee.tasks.traces.formats.otel_spans import Span
from combee.tasks.traces.model import Outcome

TASK_KEYS = ("combee.task_id", "session.id", "gen_ai.conversation.id")
PASS = {"pass", "passed", "correct", "success", "succeeded", "true", "yes", "relevant"}
FAIL = {"fail", "failed", "incorrect", "failure", "false", "no", "not_relevant", "error"}


def outcome_of(root: Span, spans: list[Span]) -> tuple[Outcome, list[dict[str, Any]]]:
    evaluations = []
    for span in spans:
        for name, attributes in span.events:
            if name == "gen_ai.evaluation.result":
                evaluations.append(dict(attributes))
        if any(key.startswith("gen_ai.evaluation.score.") for key in span.attributes):
            evaluations.append(
                {k: v for k, v in span.attributes.items() if k.startswith("gen_ai.evaluation.")}
            )
    for span in (root, *spans):
        explicit = _explicit(span.attributes)
        if explicit is not None:
            return explicit, evaluations
    if not evaluations:
        return Outcome(), evaluations
    first = evaluations[0]
    reward = _number(first.get("gen_ai.evaluation.score.value"))
    label = str(first.get("gen_ai.evaluation.score.label") or "").strip().lower()
    success = True if label in PASS else False if label in FAIL else None
    if success is None and reward is not None and 0.0 <= reward <= 1.0:
        success = reward >= 1.0
    feedback = str(first.get("gen_ai.evaluation.explanation") or "")
    return Outcome(success=success, reward=reward, feedback=feedback), evaluations


def _explicit(attributes: Mapping[str, Any]) -> Outcome | None:
    reward = _number(attributes.get("combee.reward"))
    success = attributes.get("combee.success")
    success = success if isinstance(success, bool) else None
    feedback = attributes.get("combee.feedback")
    if reward is None and success is None and feedback is None:
        return None
    if success is None and reward is not None:
        success = reward >= 1.0
    text = (
        "" if feedback is None else feedback if isinstance(feedback, str) else json.dumps(feedback)
    )
    return Outcome(success=success, reward=reward, feedback=text)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def task_id_of(root: Span, spans: list[Span]) -> str:
    sources = [root.attributes, root.resource, *(span.attributes for span in spans)]
    for key in TASK_KEYS:
        for attributes in sources:
            if attributes.get(key) not in (None, ""):
                return str(attributes[key])
    return ""
