"""The store's conversations as MLflow traces (``combee serve export --format mlflow``).

Each conversation of a namespace becomes one trace in the experiment: one chat span
(``CHAT_MODEL``) whose inputs hold the model, the messages up to the last reply and the agent's
tools, and whose outputs hold that reply as a chat completion (``choices[0].message``), as
MLflow's OpenAI autologging records a call; so ``combee learn --traces mlflow:EXPERIMENT``
(:mod:`combee.tasks.traces.formats.mlflow_traces`) reads the same conversation back. The span runs
from the first request to the last reply. Tags: ``combee.namespace``, ``combee.trace_id`` (the
store's id) and ``task_id``; a session is the trace's ``mlflow.trace.session`` metadata.

The conversation's outcome (the latest reported, as :func:`latest_outcomes` merges it) becomes
feedback assessments from the source ``combee-serve``: ``success`` (the flag), ``reward`` (the
number), the text as the first one's rationale (alone, as ``feedback``, when the report has
neither), so the reader's outcome has the same success and reward and the text as
``success: TEXT`` (``reward: TEXT``, ``feedback: TEXT``). Only trusted text (sent with the
operator token) is exported: the reader takes every rationale as the checker's, so text an
agent sent is left out.

Exporting again duplicates nothing: a conversation whose ``combee.trace_id`` the experiment holds
for the namespace is not written again; when feedback reported since changed its outcome (the
``combee.outcome`` tag keeps a digest of the exported one), its ``combee-serve`` assessments are
replaced.

MLflow sends traces to the process's tracking URI, so the export sets it to ``tracking_uri`` while
it writes and restores the one before (and ``MLFLOW_TRACKING_URI``) after: do not trace to another
server from the same process meanwhile.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from combee.errors import ConfigError
from combee.serve.learner import latest_outcomes
from combee.serve.records import Exchange, Feedback
from combee.serve.store import TraceStore
from combee.serve.trace_form import conversation

TAG_NAMESPACE = "combee.namespace"
TAG_TRACE = "combee.trace_id"
TAG_OUTCOME = "combee.outcome"
TAG_TASK = "task_id"
SESSION_METADATA = "mlflow.trace.session"
SOURCE_ID = "combee-serve"
"""The source of the assessments an export logs (those it may replace)."""
SPAN_NAME = "conversation"

_PLAIN = re.compile(r"[A-Za-z0-9_.-]+")
"""A namespace that may go into a search filter as it is (the gateway allows no other)."""
_PAGE = 100


def export_mlflow(
    store: str | os.PathLike[str] | TraceStore,
    *,
    namespace: str,
    tracking_uri: str | None,
    experiment: str,
    scored_only: bool = False,
) -> int:
    """Write the conversations of ``namespace`` as traces of the MLflow experiment
    ``experiment`` (created if needed) at ``tracking_uri`` (None: ``MLFLOW_TRACKING_URI``, else
    MLflow's default), see the module; returns how many traces it wrote or whose outcome it
    brought up to date. ``scored_only``: only conversations with feedback."""
    if not experiment:
        raise ConfigError("names no MLflow experiment", setting="experiment")
    from combee.mlflow_store import check_reachable, import_mlflow, shown_uri, tracking_uri_of

    mlflow = import_mlflow()  # a ConfigError naming the extra when it is missing
    from mlflow.exceptions import MlflowException
    from mlflow.tracking import MlflowClient

    uri = tracking_uri_of(tracking_uri)
    check_reachable(uri)
    opened = store if isinstance(store, TraceStore) else TraceStore(store)
    try:
        outcomes = latest_outcomes(f for _, f in opened.feedback_after(namespace, 0))
        client = MlflowClient(tracking_uri=uri)
        try:
            experiment_id = _experiment_id(client, experiment)
            present = _exported(client, experiment_id, namespace)
            changed = 0
            new: dict[str, tuple[str, Feedback | None]] = {}
            with _traces_sent_to(mlflow, uri):
                for trace_id in opened.trace_ids(namespace):
                    outcome = outcomes.get(trace_id)
                    if scored_only and outcome is None:
                        continue
                    known = present.get(trace_id)
                    if known is not None:
                        if (known.tags or {}).get(TAG_OUTCOME, "") != _digest(outcome):
                            _replace_outcome(mlflow, client, known, outcome)
                            changed += 1
                        continue
                    written = _write_trace(mlflow, opened.exchanges(trace_id), experiment_id)
                    if written is not None:
                        new[trace_id] = (written, outcome)
                mlflow.flush_trace_async_logging()
                if new:
                    landed = _exported(client, experiment_id, namespace)
                    missing = sorted(set(new) - set(landed))
                    if missing:
                        raise ConfigError(
                            f"{shown_uri(uri)} did not take {len(missing)} of {len(new)} "
                            f"trace(s) (first: {missing[0]}); MLflow's log says why",
                            setting="tracking_uri",
                        )
                    for mlflow_id, outcome in new.values():
                        _log_outcome(mlflow, client, mlflow_id, outcome)
        except MlflowException as error:
            raise ConfigError(
                f"{shown_uri(uri)} refused the export ({error.message})", setting="tracking_uri"
            ) from None
        return len(new) + changed
    finally:
        if opened is not store:
            opened.close()


def _experiment_id(client: Any, name: str) -> str:
    found = client.get_experiment_by_name(name)
    if found is None:
        return str(client.create_experiment(name))
    return str(found.experiment_id)


def _exported(client: Any, experiment_id: str, namespace: str) -> dict[str, Any]:
    """The namespace's traces in the experiment (their info), by the store's trace id."""
    query = f"tag.`{TAG_NAMESPACE}` = '{namespace}'" if _PLAIN.fullmatch(namespace) else None
    found: dict[str, Any] = {}
    token = None
    while True:
        page = client.search_traces(
            locations=[experiment_id],
            filter_string=query,
            max_results=_PAGE,
            include_spans=False,
            page_token=token,
        )
        for item in page:
            tags: Mapping[str, str] = item.info.tags or {}
            if tags.get(TAG_NAMESPACE) == namespace and tags.get(TAG_TRACE):
                found.setdefault(tags[TAG_TRACE], item.info)
        token = page.token
        if not token:
            return found


def _write_trace(mlflow: Any, exchanges: Sequence[Exchange], experiment_id: str) -> str | None:
    """The conversation as a trace (sent as MLflow sends traces); its MLflow id (None: no
    reply to export)."""
    from mlflow.entities import SpanType

    messages = conversation(exchanges)
    if not messages:
        return None
    first = exchanges[0]
    model = next((e.model for e in reversed(exchanges) if e.reply is not None and e.model), "")
    tools = next((list(e.tools) for e in reversed(exchanges) if e.tools), None)
    inputs: dict[str, Any] = {"model": model, "messages": [dict(m) for m in messages[:-1]]}
    if tools:
        inputs["tools"] = tools
    reply = dict(messages[-1])
    outputs = {
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": reply,
                "finish_reason": "tool_calls" if reply.get("tool_calls") else "stop",
            }
        ],
    }
    start = _ns(min(e.created - e.latency_s for e in exchanges))
    end = max(start, _ns(max(e.created for e in exchanges)))
    span = mlflow.start_span_no_context(
        name=SPAN_NAME,
        span_type=SpanType.CHAT_MODEL,
        inputs=inputs,
        tags={
            TAG_NAMESPACE: first.namespace,
            TAG_TRACE: first.trace_id,
            TAG_TASK: first.task_id or first.trace_id,
        },
        metadata={SESSION_METADATA: first.session_id} if first.session_id else None,
        experiment_id=experiment_id,
        start_time_ns=start,
    )
    versions = sorted({e.playbook_version for e in exchanges if e.playbook_version is not None})
    span.set_attributes({"combee.exchanges": len(exchanges), "combee.playbook_versions": versions})
    span.set_outputs(outputs)
    span.end(end_time_ns=end)
    return str(span.trace_id)


def _log_outcome(mlflow: Any, client: Any, trace_id: str, outcome: Feedback | None) -> None:
    """The outcome's assessments on the trace, then its digest as the ``combee.outcome`` tag
    (last: an export stopped in between brings the trace up to date next time)."""
    if outcome is None:
        return
    for judgement in assessments(outcome):
        mlflow.log_assessment(trace_id, judgement)
    client.set_trace_tag(trace_id, TAG_OUTCOME, _digest(outcome))


def _replace_outcome(mlflow: Any, client: Any, info: Any, outcome: Feedback | None) -> None:
    for old in info.assessments or []:
        source = getattr(old, "source", None)
        if getattr(source, "source_id", None) == SOURCE_ID:
            mlflow.delete_assessment(info.trace_id, old.assessment_id)
    if outcome is None:
        client.delete_trace_tag(info.trace_id, TAG_OUTCOME)
    _log_outcome(mlflow, client, info.trace_id, outcome)


def assessments(outcome: Feedback) -> list[Any]:
    """The MLflow feedback assessments of ``outcome`` (see the module)."""
    from mlflow.entities import AssessmentSource, AssessmentSourceType
    from mlflow.entities import Feedback as Judgement

    source = AssessmentSource(source_type=AssessmentSourceType.CODE, source_id=SOURCE_ID)
    created = int(outcome.created * 1000) or None
    text: str | None = _exported_text(outcome) or None
    found: list[Any] = []
    for name, value in (("success", outcome.success), ("reward", outcome.reward)):
        if value is not None:
            found.append(
                Judgement(
                    name=name, value=value, rationale=text, source=source, create_time_ms=created
                )
            )
            text = None
    if text is not None:
        found.append(
            Judgement(name="feedback", value=None, rationale=text, source=source,
                      create_time_ms=created)
        )  # fmt: skip
    return found


def _digest(outcome: Feedback | None) -> str:
    """What the ``combee.outcome`` tag keeps of an exported outcome ("" for none)."""
    if outcome is None:
        return ""
    exported = json.dumps(
        [outcome.success, outcome.reward, _exported_text(outcome)], ensure_ascii=False
    )
    return hashlib.sha256(exported.encode("utf-8")).hexdigest()[:16]


def _exported_text(outcome: Feedback) -> str:
    """The text an outcome's assessments carry: trusted text only (see the module)."""
    return outcome.text if outcome.trusted else ""


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


@contextmanager
def _traces_sent_to(mlflow: Any, uri: str | None) -> Iterator[None]:
    """MLflow's tracer sends traces to the process's tracking URI: ``uri`` meanwhile, the one
    set before (and ``MLFLOW_TRACKING_URI``) restored after."""
    if uri is None or uri == mlflow.get_tracking_uri():
        yield
        return
    from mlflow.tracking._tracking_service import utils

    before = utils._tracking_uri
    environment = os.environ.get("MLFLOW_TRACKING_URI")
    mlflow.set_tracking_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(before)
        if environment is None:
            os.environ.pop("MLFLOW_TRACKING_URI", None)
        else:
            os.environ["MLFLOW_TRACKING_URI"] = environment
