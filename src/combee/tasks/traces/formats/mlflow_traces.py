"""GenAI traces of an MLflow experiment (``mlflow:EXPERIMENT`` in ``traces``), read from the
tracking server through MLflow's own client.

One MLflow trace is one attempt. Its messages are the last chat call's: the ``messages`` of its
inputs (system, user, assistant turns with tool calls, tool results), then the reply in its
outputs (``choices[0].message``), as MLflow's OpenAI autologging records them. The task id is the
trace's ``task_id`` tag (or metadata), else the trace id. The outcome is the trace's feedback
(``mlflow.log_feedback``): the first flag is the success, the first number the reward (without a
flag, success at 1 or more), ``yes``/``pass``/``correct`` and ``no``/``fail``/``incorrect`` a flag;
the rationales are the feedback text. Without feedback, the ``success`` or ``reward`` tag; without
either the outcome is unknown and the reflector judges the trajectory itself.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from combee.errors import ConfigError, DatasetError
from combee.tasks.traces.chat import MessageError, chat_messages
from combee.tasks.traces.model import Outcome, Trace

logger = logging.getLogger(__name__)

PREFIX = "mlflow:"
_YES = frozenset({"yes", "pass", "passed", "correct", "true", "success", "good"})
_NO = frozenset({"no", "fail", "failed", "incorrect", "false", "failure", "bad"})


def is_mlflow(spec: object) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIX)


def since_ms(since: str | datetime | None) -> int | None:
    """``since`` (an ISO time; UTC unless it says otherwise) in epoch milliseconds."""
    if since is None or isinstance(since, datetime):
        moment = since
    else:
        try:
            moment = datetime.fromisoformat(since)
        except ValueError:
            raise ConfigError(
                f"{since!r} is not an ISO time (e.g. 2025-06-01T12:00:00)", setting="since"
            ) from None
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def read_mlflow(
    spec: str, *, tracking_uri: str | None = None, since: str | datetime | None = None
) -> list[Trace]:
    """The traces of the experiment ``spec`` names (``mlflow:NAME``), newer than ``since``."""
    name = spec[len(PREFIX) :]
    if not name:
        raise ConfigError(f"{spec!r} names no experiment (mlflow:EXPERIMENT)", setting="traces")
    from combee.mlflow_store import check_reachable, import_mlflow, shown_uri, tracking_uri_of

    import_mlflow()  # a ConfigError naming the extra when it is missing
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    uri = tracking_uri_of(tracking_uri)
    check_reachable(uri)
    client = MlflowClient(tracking_uri=uri)
    after = since_ms(since)
    try:
        experiment = client.get_experiment_by_name(name)
        if experiment is None:
            raise ConfigError(
                f"names experiment {name!r}, which {shown_uri(uri)} does not have",
                setting="traces",
            )
        found: list[Any] = []
        token = None
        while True:
            page = client.search_traces(
                locations=[experiment.experiment_id],
                filter_string=None if after is None else f"trace.timestamp_ms > {after}",
                max_results=100,
                order_by=["timestamp_ms ASC"],
                page_token=token,
            )
            found.extend(page)
            token = page.token
            if not token:
                break
    except MlflowException as error:
        raise ConfigError(
            f"{spec}: {shown_uri(uri)} refused the search ({error.message})",
            setting="tracking_uri",
        ) from None
    if not found:
        when = "" if since is None else f" after {since}"
        raise ConfigError(f"{spec}: the experiment holds no traces{when}", setting="traces")
    traces = [_trace(item, spec) for item in found]
    unknown = sum(1 for t in traces if not t.outcome.known)
    if unknown:
        logger.warning(
            "%s: %d of %d traces carry no feedback or outcome tag: taught anyway, the "
            "reflector judges them itself",
            spec,
            unknown,
            len(traces),
        )
    return traces


def _trace(item: Any, spec: str) -> Trace:
    info = item.info
    trace_id = str(info.trace_id)
    where = f"{spec}/{trace_id}"
    messages = _messages(item.data.spans, where)
    tags: Mapping[str, Any] = info.tags or {}
    metadata: Mapping[str, Any] = info.trace_metadata or {}
    task = tags.get("task_id") or metadata.get("task_id") or trace_id
    return Trace(
        id=trace_id,
        task_id=str(task),
        messages=messages,
        outcome=_outcome(info.assessments or [], tags),
        source=where,
        meta={"request_time": info.request_time, "tags": dict(tags)},
    )


def _messages(spans: Sequence[Any], where: str) -> list[Any]:
    """The last chat call's messages and its reply."""
    chats = [s for s in spans if isinstance(s.inputs, Mapping) and "messages" in s.inputs]
    if not chats:
        raise DatasetError(
            where,
            None,
            "has no span with chat messages (inputs.messages): record it with MLflow's "
            "autologging (mlflow.openai.autolog()) or log the messages as a span's inputs",
        )
    last = max(chats, key=lambda s: s.start_time_ns or 0)
    raw = [dict(m) for m in last.inputs["messages"] if isinstance(m, Mapping)]
    reply = _reply(last.outputs)
    if reply is not None:
        raw.append(reply)
    try:
        return chat_messages(raw)
    except MessageError as error:
        raise DatasetError(where, None, str(error)) from None


def _reply(outputs: Any) -> dict[str, Any] | None:
    if not isinstance(outputs, Mapping):
        return None
    choices = outputs.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        message = choices[0].get("message")
        if isinstance(message, Mapping):
            return {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
    return None


def _outcome(assessments: Sequence[Any], tags: Mapping[str, Any]) -> Outcome:
    success: bool | None = None
    reward: float | None = None
    notes: list[str] = []
    for assessment in assessments:
        feedback = getattr(assessment, "feedback", None)
        if feedback is None:  # an expectation, not a judgement
            continue
        flag, number = _judged(feedback.value)
        if success is None and flag is not None:
            success = flag
        if reward is None and number is not None:
            reward = number
        if assessment.rationale:
            notes.append(f"{assessment.name}: {assessment.rationale}")
    if success is None and reward is None:
        success, reward = _judged(tags.get("success", tags.get("reward")))
    if success is None and reward is not None:
        success = reward >= 1.0
    return Outcome(success=success, reward=reward, feedback="\n".join(notes))


def _judged(value: Any) -> tuple[bool | None, float | None]:
    if isinstance(value, bool):
        return value, None
    if isinstance(value, int | float):
        return None, float(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _YES:
            return True, None
        if word in _NO:
            return False, None
        try:
            return None, float(word)
        except ValueError:
            return None, None
    return None, None
