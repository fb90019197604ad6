"""OpenTelemetry exports written by the official OpenAI instrumentation and by OpenInference
(in each content mode), checked in the prompt the reflector receives at the scripted server."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from combee.errors import ConfigError, DatasetError
from combee.tasks.traces import read_traces
from tests.paths import DATA
from tests.tasks.traces.trace_prompts import reflector_prompts

REAL = DATA / "traces" / "real" / "otel-genai"
CONVERSATION = (
    "You are a helpful weather assistant.",
    "What's the weather like in Paris right now?",
    '-> call get_weather({"city": "Paris", "unit": "celsius"})',
    'tool get_weather: {"city": "Paris", "temperature": 18',
    "It is currently 18°C and partly cloudy in Paris.",
)
WITH_CONTENT = {
    "span_only (OTLP JSON)": ["openai-v2.span_only.otlp.json"],
    "span_only (console)": ["openai-v2.span_only.console.jsonl"],
    "event_only (spans + logs)": [
        "openai-v2.event_only.otlp.json",
        "openai-v2.event_only.logs.otlp.json",
    ],
    "legacy events (spans + logs)": [
        "openai-v2.legacy_true.otlp.json",
        "openai-v2.legacy_true.logs.console.jsonl",
    ],
    "OpenInference": ["openinference.default.otlp.json"],
    "OpenInference with gen_ai": ["openinference.genai_semconv.console.jsonl"],
}


def in_order(prompt: str, parts: tuple[str, ...]) -> bool:
    positions = [prompt.find(part) for part in parts]
    return -1 not in positions and positions == sorted(positions)


@pytest.mark.parametrize("files", WITH_CONTENT.values(), ids=WITH_CONTENT.keys())
def test_the_reflector_sees_the_whole_conversation_in_order(
    tmp_path: Path, files: list[str]
) -> None:
    prompts, _ = reflector_prompts([REAL / f for f in files], tmp_path / "run")
    (prompt,) = prompts.values()  # one trace, though its spans and events are in two files
    assert in_order(prompt, CONVERSATION), prompt


def test_a_folder_learns_from_what_holds_content_and_says_what_it_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    for name in ("openai-v2.span_only.otlp.json", "openai-v2.true.otlp.json"):
        (folder / name).write_bytes((REAL / name).read_bytes())
    with caplog.at_level(logging.WARNING):
        imported = read_traces([folder])
    assert len(imported.traces) == 1
    ((skipped, why),) = imported.skipped
    assert skipped.name == "openai-v2.true.otlp.json"
    assert "without message content" in why and "span_only" in why
    assert "openai-v2.true.otlp.json" in caplog.text
    assert "1 file(s) skipped" in imported.summary()


@pytest.mark.parametrize(
    ("name", "needles"),
    [
        ("openai-v2.true.otlp.json", ("without message content", "span_only")),
        ("openai-v2.event_only.otlp.json", ("without message content", "logs export")),
        ("openai-v2.event_only.logs.otlp.json", ("only events", "spans export")),
    ],
)
def test_a_named_file_without_content_says_how_to_record_it(
    name: str, needles: tuple[str, ...]
) -> None:
    with pytest.raises(DatasetError) as caught:
        read_traces([REAL / name])
    assert name in str(caught.value)
    for needle in needles:
        assert needle in str(caught.value)


def test_a_folder_without_any_trace_says_why(tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    (folder / "a.otlp.json").write_bytes((REAL / "openai-v2.true.otlp.json").read_bytes())
    with pytest.raises(ConfigError) as caught:
        read_traces([folder])
    assert "hold no traces" in str(caught.value) and "without message content" in str(caught.value)


def test_one_trace_split_over_two_files_is_one_trace(tmp_path: Path) -> None:
    export = json.loads((REAL / "openai-v2.span_only.otlp.json").read_text(encoding="utf-8"))
    scope = export["resourceSpans"][0]["scopeSpans"]
    spans = [(s, span) for s, group in enumerate(scope) for span in group["spans"]]
    assert len(spans) == 3
    halves = (spans[:2], spans[2:])
    files = []
    for n, half in enumerate(halves):
        part = json.loads(json.dumps(export))
        for s, group in enumerate(part["resourceSpans"][0]["scopeSpans"]):
            group["spans"] = [span for where, span in half if where == s]
        files.append(tmp_path / f"part{n}.otlp.json")
        files[-1].write_text(json.dumps(part), encoding="utf-8")
    whole = read_traces([REAL / "openai-v2.span_only.otlp.json"]).traces
    imported = read_traces([tmp_path])
    assert [t.messages for t in imported.traces] == [t.messages for t in whole]
    assert imported.repeated == [] and imported.skipped == []


def test_an_agent_span_answers_after_the_tools_it_ran(tmp_path: Path) -> None:
    """An ``invoke_agent`` span (as the JavaScript OTLP exporter writes one, without chat
    spans): its final answer is placed at its end, after its tool spans."""

    def attribute(key: str, value: str) -> dict[str, object]:
        return {"key": key, "value": {"stringValue": value}}

    trace = "5b8efff798038103d269b633813fc60c"
    user = [{"role": "user", "parts": [{"type": "text", "content": "Book the 9am train."}]}]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "Booked: seat 12A."}]}]
    agent = {
        "traceId": trace, "spanId": "a000000000000001", "name": "invoke_agent booking",
        "startTimeUnixNano": "1000", "endTimeUnixNano": "9000",
        "attributes": [
            attribute("gen_ai.operation.name", "invoke_agent"),
            attribute("gen_ai.input.messages", json.dumps(user)),
            attribute("gen_ai.output.messages", json.dumps(answer)),
        ],
    }  # fmt: skip
    tools = [
        {
            "traceId": trace,
            "spanId": f"b00000000000000{n}",
            "parentSpanId": "a000000000000001",
            "name": f"execute_tool {name}",
            "startTimeUnixNano": str(2000 + n * 1000),
            "endTimeUnixNano": str(2500 + n * 1000),
            "attributes": [
                attribute("gen_ai.operation.name", "execute_tool"),
                attribute("gen_ai.tool.name", name),
                attribute("gen_ai.tool.call.id", f"call_{n}"),
                attribute("gen_ai.tool.call.result", result),
            ],
        }
        for n, (name, result) in enumerate([("find_train", "9:00 IC 512"), ("book", "12A")])
    ]
    path = tmp_path / "agent.otlp.json"
    export = {"resourceSpans": [{"scopeSpans": [{"spans": [agent, *tools]}]}]}
    path.write_text(json.dumps(export), encoding="utf-8")
    (trace_read,) = read_traces([path]).traces
    roles = [(m.role, m.name or m.content) for m in trace_read.messages]
    assert roles[0] == ("user", "Book the 9am train.")
    assert roles[-1] == ("assistant", "Booked: seat 12A.")
    assert [name for role, name in roles if role == "tool"] == ["find_train", "book"]


def test_each_skipped_file_gets_its_own_cause(tmp_path: Path) -> None:
    # A logs export beside spans of other traces still holds only events of its own, and a file
    # of chat spans without content counts its own spans, not the folder's.
    folder = tmp_path / "exports"
    folder.mkdir()
    names = (
        "openai-v2.span_only.otlp.json",
        "openai-v2.true.otlp.json",
        "openai-v2.event_only.logs.otlp.json",
    )
    for name in names:
        (folder / name).write_bytes((REAL / name).read_bytes())
    own_chats = sum(
        1
        for line in [json.loads((REAL / names[1]).read_text(encoding="utf-8"))]
        for resource in line["resourceSpans"]
        for scope in resource["scopeSpans"]
        for span in scope["spans"]
        if any(
            a["key"] == "gen_ai.operation.name" and a["value"].get("stringValue") == "chat"
            for a in span.get("attributes", [])
        )
    )
    imported = read_traces([folder])
    why = {path.name: reason for path, reason in imported.skipped}
    assert set(why) == set(names[1:])
    assert f"has {own_chats} GenAI chat span(s) without message content" in why[names[1]]
    assert "only events" in why[names[2]] and "spans export" in why[names[2]]
