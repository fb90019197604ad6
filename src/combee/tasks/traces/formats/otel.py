"""OpenTelemetry GenAI spans exported as JSON: one trace per OTel trace id.

A file holds one JSON record or several (JSON Lines, or records printed one after another, as
Python's ``ConsoleSpanExporter`` does), each in one of these shapes:

* OTLP JSON, as the OTLP/HTTP JSON encoding and the Collector's file exporter write it:
  ``{"resourceSpans": [{"resource": {"attributes": [...]}, "scopeSpans": [{"spans": [...]}]}]}``,
  each span with hex ``traceId``, ``spanId`` and ``parentSpanId``, ``name``,
  ``startTimeUnixNano`` (a decimal string or a number), ``attributes`` as ``[{"key", "value":
  {"stringValue" | "intValue" | "doubleValue" | "boolValue" | "arrayValue" | "kvlistValue"}}]``,
  ``events`` and ``status``; a bare OTLP span as a record is read too.
* The OpenTelemetry Python SDK's span JSON (what ``ConsoleSpanExporter`` prints):
  ``{"name", "context": {"trace_id", "span_id"}, "parent_id", "start_time", "status",
  "attributes": {...}, "events": [...], "resource": {"attributes": {...}}}``.
* Events exported as logs, in either shape (:mod:`.otel_logs`): their messages are put on the
  span each belongs to.

All the OTel files of an import are read together, so a trace whose spans (or events) are in
several files is one trace, and a file that adds to no trace is named with the reason (its
chat spans carry no content: how to record it; it holds only events: give the spans too).

Messages follow the GenAI semantic conventions. Chat spans (``gen_ai.operation.name`` ``chat``,
``text_completion`` or ``generate_content``; OpenLLMetry's ``llm.request.type`` before it)
carry ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and ``gen_ai.output.messages``
(JSON arrays of ``{role, parts}``: text, ``tool_call`` and ``tool_call_response`` parts; the
first output message is the answer), or in older instrumentations the indexed
``gen_ai.prompt.<n>.*`` / ``gen_ai.completion.<n>.*`` attributes, or the span events
``gen_ai.{system,user,assistant,tool}.message`` and ``gen_ai.choice`` (their body in the event's
attributes or its ``gen_ai.event.content``), or OpenInference's ``llm.input_messages.<i>.*``
(:mod:`.otel_openinference`). ``execute_tool`` spans carry ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` and ``gen_ai.tool.call.result``. When the
last chat span's input carries the conversation so far (it holds an assistant turn), the trace is
that input and its output, plus any tool run after it; otherwise the chat and tool spans are
joined in time order, messages already there dropped, a tool span whose call no chat recorded
adding that call. Agent spans (``invoke_agent``) are read as chats only in a trace without chat
spans, their input where they start and their answer where they end (after the tools they ran);
OpenInference's TOOL spans are tool spans. Traces without GenAI content (an HTTP request's, say)
are skipped.

The outcome is unknown unless a span says: ``combee.reward``, ``combee.success`` and
``combee.feedback`` attributes (the root span's first), else the first
``gen_ai.evaluation.result`` (a span event, or a span carrying its attributes):
``gen_ai.evaluation.score.value`` is the reward, ``gen_ai.evaluation.score.label`` the success
(pass/fail, correct/incorrect, ...; without a label a score from 0 to 1 succeeds at 1) and
``gen_ai.evaluation.explanation`` the feedback. The task id is ``combee.task_id``, ``session.id``
or ``gen_ai.conversation.id`` (root span, then resource, then any span), else the trace id.

Read with the standard library, not ``opentelemetry-proto``: its classes with protobuf's
``json_format`` read only the OTLP shape, and misread it (OTLP JSON writes trace and span ids
in hex where protobuf's JSON mapping expects base64, so the ids come out mangled), and the
SDK's span JSON not at all; for two plain JSON shapes a protobuf dependency buys nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from combee.errors import DatasetError
from combee.tasks.traces.formats.common import (
    Reader,
    TraceFileEmpty,
    name_ends,
    one_file,
    read_text,
)
from combee.tasks.traces.formats.otel_logs import LogEvent, is_log_record, read_items
from combee.tasks.traces.formats.otel_messages import (
    EVENT_ROLES,
    INDEXED,
    INPUT,
    OUTPUT,
    maybe_json,
    span_inputs,
    span_outputs,
    text_of,
)
from combee.tasks.traces.formats.otel_openinference import OI_CALL_ID, OI_INPUT, OI_KIND
from combee.tasks.traces.formats.otel_outcome import outcome_of, task_id_of
from combee.tasks.traces.formats.otel_spans import Span, SpanError, records
from combee.tasks.traces.model import Outcome, ToolCall, Trace, TraceMessage

logger = logging.getLogger(__name__)

CHAT_OPERATIONS = ("chat", "text_completion", "generate_content", "completion")
AGENT_OPERATIONS = ("invoke_agent", "create_agent", "invoke_workflow")


@dataclass
class Chat:
    span: Span
    inputs: list[TraceMessage] = field(default_factory=list)
    outputs: list[TraceMessage] = field(default_factory=list)
    answer: bool = False
    """Only the outputs of an agent span, placed at its end."""


def sniff(path: Path) -> bool:
    if not name_ends(path, (".json", ".jsonl")):
        return False
    try:
        first = next(records(path, read_text(path)), (0, None))[1]
    except DatasetError:
        return False
    if not isinstance(first, Mapping):
        return False
    context = first.get("context")
    return (
        "resourceSpans" in first
        or ("traceId" in first and "spanId" in first)
        or (isinstance(context, Mapping) and "trace_id" in context and "span_id" in context)
        or is_log_record(first)
    )


NO_GENAI = (
    "holds no GenAI messages: no span carries gen_ai.input.messages / gen_ai.output.messages "
    "(or gen_ai.prompt.* / gen_ai.completion.*, or OpenInference's llm.input_messages.*) and "
    "none is a tool span"
)
DETAILS_EVENT = "gen_ai.client.inference.operation.details"


def read_group(paths: Sequence[Path]) -> tuple[list[Trace], list[TraceFileEmpty]]:
    """The traces of ``paths`` read together (one trace's spans, and the events that carry
    their messages, may be in several files), and the files that added to none of them."""
    by_trace: dict[str, list[Span]] = {}
    events: list[LogEvent] = []
    for path in paths:
        found, logged = read_items(path)
        events += logged
        for span in found:
            by_trace.setdefault(span.trace_id, []).append(span)
    attached = _attach(events, by_trace)
    traces, used = [], set()
    for trace_id, found in by_trace.items():
        trace = _trace(trace_id, found)
        if trace is not None:
            traces.append(trace)
            used |= {span.path for span in found} | attached.get(trace_id, set())
    spans_of: dict[Path, list[Span]] = {}
    for span in (span for found in by_trace.values() for span in found):
        spans_of.setdefault(span.path, []).append(span)
    events_of: dict[Path, list[LogEvent]] = {}
    for event in events:
        events_of.setdefault(event.path, []).append(event)
    return traces, [
        TraceFileEmpty(str(path), _why_empty(spans_of.get(path, []), events_of.get(path, [])))
        for path in paths
        if path not in used
    ]


def _attach(events: list[LogEvent], by_trace: dict[str, list[Span]]) -> dict[str, set[Path]]:
    """Each event's content put on the span it belongs to; the files that gave some, by trace."""
    spans_by_id = {(s.trace_id, s.span_id): s for found in by_trace.values() for s in found}
    given: dict[str, set[Path]] = {}
    for event in events:
        span = spans_by_id.get((event.trace_id, event.span_id))
        if span is None:
            continue
        if event.name == DETAILS_EVENT:
            span.attributes = {**event.attributes, **span.attributes}
        elif event.name in EVENT_ROLES or event.name == "gen_ai.choice":
            body = event.body if isinstance(event.body, Mapping) else {"content": event.body}
            span.events = [*span.events, (event.name, {**event.attributes, **body})]
        else:
            continue
        given.setdefault(event.trace_id, set()).add(event.path)
    return given


def _why_empty(spans: list[Span], events: list[LogEvent]) -> str:
    """Why a file added to no trace, from its own spans and events."""
    if not spans and events:
        return (
            "holds only events (logs), and no file given with it holds the spans they belong "
            "to: give the spans export too"
        )
    chats = [s for s in spans if s.operation in CHAT_OPERATIONS]
    if chats:
        return (
            f"has {len(chats)} GenAI chat span(s) without message content: the "
            "instrumentation was not asked to record it (the official OpenAI one records it on "
            "spans with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only; in "
            "event_only mode give its logs export beside the spans)"
        )
    return NO_GENAI


def _trace(trace_id: str, spans: list[Span]) -> Trace | None:
    spans.sort(key=lambda span: span.start)
    ids = {span.span_id for span in spans}
    root = next((s for s in spans if s.parent_id not in ids), spans[0])
    chats = [_chat(s) for s in spans if s.operation in CHAT_OPERATIONS or _bare_chat(s)]
    if not chats:
        chats = [_chat(s) for s in spans if s.operation in AGENT_OPERATIONS]
    tools = [s for s in spans if s.operation == "execute_tool" or _kind(s) == "TOOL"]
    with_content = [c for c in chats if c.inputs or c.outputs]
    messages = _named_results(_conversation(with_content, tools))
    if not messages:
        return None
    if chats and not with_content:
        logger.warning(
            "trace %s: its %d chat span(s) carry no message content, so only its tool spans "
            "were read (record content on spans, or give the logs export beside them)",
            trace_id,
            len(chats),
        )
    outcome, evaluations = outcome_of(root, spans)
    if not outcome.known and root.error is not None:
        outcome = Outcome(feedback=f"The run ended in an error: {root.error or 'no message'}")
    models = {s.attributes.get("gen_ai.request.model") for s in spans} - {None}
    return Trace(
        id=trace_id,
        task_id=task_id_of(root, spans) or trace_id,
        messages=messages,
        outcome=outcome,
        source=f"{_files_of(spans)}:trace {trace_id}",
        meta={
            "trace_id": trace_id,
            "root_span": root.name,
            "models": sorted(map(str, models)),
            "evaluations": evaluations,
        },
    )


def _named_results(messages: list[TraceMessage]) -> list[TraceMessage]:
    """Tool results named after the call they answer, where the record left the name out."""
    names = {c.id: c.name for m in messages for c in m.tool_calls if c.id}
    return [
        replace(m, name=names[m.tool_call_id])
        if m.role == "tool" and not m.name and m.tool_call_id in names
        else m
        for m in messages
    ]


def _kind(span: Span) -> str:
    """OpenInference's span kind (``LLM``, ``TOOL``, ``AGENT``, ...), or ``""``."""
    return str(span.attributes.get(OI_KIND) or "").upper()


def _bare_chat(span: Span) -> bool:
    """A span without an operation name that carries chat messages (older instrumentations,
    OpenInference's LLM spans)."""
    keys = span.attributes.keys()
    events = {name for name, _ in span.events}
    return not span.operation and (
        INPUT in keys
        or OUTPUT in keys
        or any(INDEXED.match(k) or k.startswith(OI_INPUT) for k in keys)
        or bool(events & {*EVENT_ROLES, "gen_ai.choice"})
    )


def _conversation(chats: list[Chat], tools: list[Span]) -> list[TraceMessage]:
    """The last chat's input and output when that input carries the history, an earlier
    assistant turn (then only tools run after it are added); else every chat and tool span in
    time order, repeats dropped."""
    last = chats[-1] if chats else None
    if last and any(m.role == "assistant" for m in last.inputs):
        messages = [*last.inputs, *last.outputs]
        steps: list[Chat | Span] = [t for t in tools if t.start >= last.span.start]
    else:
        messages = []
        steps = [*chats, *tools]
        # An agent span's answer comes when it ends, after the tools it ran.
        steps += [Chat(c.span, [], c.outputs, answer=True) for c in chats if _agent(c)]
        steps.sort(key=_when)
    for step in steps:
        if isinstance(step, Chat):
            messages.extend(m for m in step.inputs if not _repeated(m, messages))
            if step.answer or not _agent(step):
                messages.extend(step.outputs)
        else:
            _add_tool(step, messages)
    return messages


def _agent(chat: Chat) -> bool:
    return chat.span.operation in AGENT_OPERATIONS and chat.span.end > 0


def _when(step: Chat | Span) -> int:
    if isinstance(step, Span):
        return step.start
    return step.span.end if step.answer else step.span.start


def _repeated(message: TraceMessage, messages: list[TraceMessage]) -> bool:
    if message.role == "tool" and message.tool_call_id:
        return any(m.tool_call_id == message.tool_call_id for m in messages)
    return message in messages


def _add_tool(span: Span, messages: list[TraceMessage]) -> None:
    """A tool span as its call (when no assistant turn holds it yet) and its result."""
    attributes = span.attributes
    name = str(
        attributes.get("gen_ai.tool.name")
        or attributes.get("tool.name")
        or span.name.removeprefix("execute_tool ")
    )
    call_id = str(attributes.get("gen_ai.tool.call.id") or attributes.get(OI_CALL_ID) or "")
    if call_id and any(m.tool_call_id == call_id for m in messages):
        return
    called = any(
        c.id == call_id if call_id else c.name == name for m in messages for c in m.tool_calls
    )
    if not called:
        arguments = maybe_json(
            attributes.get("gen_ai.tool.call.arguments", attributes.get("input.value"))
        )
        call = ToolCall(name=name, arguments=arguments, id=call_id)
        messages.append(TraceMessage("assistant", tool_calls=(call,)))
    result = text_of(attributes.get("gen_ai.tool.call.result", attributes.get("output.value")))
    if span.error is not None:
        problem = span.error or str(attributes.get("error.type") or "failed")
        result = f"{result}\n\nError: {problem}" if result else f"Error: {problem}"
    messages.append(TraceMessage("tool", result, tool_call_id=call_id, name=name))


def _files_of(spans: list[Span]) -> str:
    return " + ".join(dict.fromkeys(str(span.path) for span in spans))


def _chat(span: Span) -> Chat:
    try:
        return Chat(span, span_inputs(span), span_outputs(span))
    except SpanError as error:
        raise DatasetError(str(span.path), span.line, f"{span.where}: {error}") from None


read = one_file(read_group)

READER = Reader(
    name="otel",
    description="OpenTelemetry GenAI spans as OTLP JSON or the SDK's span JSON (Lines)",
    suffixes=(".json", ".jsonl"),
    sniff=sniff,
    read=read,
    read_group=read_group,
)
