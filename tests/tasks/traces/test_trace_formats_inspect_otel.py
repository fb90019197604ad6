"""Trace importers for Inspect AI eval logs (.eval, .json) and OpenTelemetry GenAI spans."""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from combee.errors import DatasetError
from combee.tasks.traces import Trace, detect_format, load_traces
from combee.tasks.traces.formats import FORMATS, inspect_log, reader
from tests import paths

DATA = paths.DATA / "traces"
LOG = DATA / "inspect" / "2026-05-14T09-12-44-00-00_disk-triage_Vb3kQz8N.json"
OTLP = DATA / "otel" / "travel-assistant.otlp.json"
SPANS = DATA / "otel" / "support-bot.spans.jsonl"


def eval_archive(path: Path, log: dict[str, Any], *, header: bool = True) -> Path:
    """An .eval archive holding ``log`` as Inspect writes one: the header (or, while running,
    only the journal's start record), one member per sample and epoch, the summaries."""
    start = {k: log[k] for k in ("version", "eval", "plan")}
    samples = log.get("samples", [])
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("_journal/start.json", json.dumps(start))
        for sample in samples:
            archive.writestr(
                f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample)
            )
        summaries = [{k: s[k] for k in ("id", "epoch", "input", "target")} for s in samples]
        archive.writestr("summaries.json", json.dumps(summaries))
        if header:
            archive.writestr(
                "header.json", json.dumps({k: v for k, v in log.items() if k != "samples"})
            )
    return path


def zstd_marked(path: Path, compress: Callable[[bytes], bytes]) -> Path:
    """``path`` rewritten with each member stored as ``compress`` makes it and marked as
    Zstandard (zip method 93), as Inspect writes archives since 2026."""
    with zipfile.ZipFile(path) as archive:
        members = [(info.filename, archive.read(info)) for info in archive.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for name, data in members:
            archive.writestr(name, compress(data))
    raw = bytearray(path.read_bytes())

    def mark(at: int, method: int, crc: int, size: int, data: bytes) -> None:
        raw[at + method : at + method + 2] = struct.pack("<H", 93)
        raw[at + crc : at + crc + 4] = struct.pack("<I", zlib.crc32(data))
        raw[at + size : at + size + 4] = struct.pack("<I", len(data))

    with zipfile.ZipFile(path) as archive:
        infos, central = archive.infolist(), archive.start_dir
    for info, (_, data) in zip(infos, members, strict=True):
        mark(info.header_offset, 8, 14, 22, data)  # the local file header
        mark(central, 10, 16, 24, data)  # its central directory entry
        lengths = struct.unpack("<HHH", raw[central + 28 : central + 34])
        central += 46 + sum(lengths)
    path.write_bytes(bytes(raw))
    return path


def roles(trace: Trace) -> list[str]:
    return [m.role for m in trace.messages]


# Inspect AI ------------------------------------------------------------------------------


def check_disk_triage(traces: list[Trace], stem: str) -> None:
    first, second, third = traces
    assert [t.id for t in traces] == [f"{stem}-1-epoch1", f"{stem}-2-epoch1", f"{stem}-1-epoch2"]
    assert [t.task_id for t in traces] == ["disk_triage/1", "disk_triage/2", "disk_triage/1"]
    assert roles(first) == ["system", "user", "assistant", "tool", "assistant"]
    (call,) = first.messages[2].tool_calls
    assert (call.name, call.id) == ("bash", "call_du_1")
    assert call.arguments == {"cmd": "du -sh /var/log/* 2>/dev/null | sort -h | tail -3"}
    result = first.messages[3]
    assert (result.tool_call_id, result.name) == ("call_du_1", "bash")
    assert result.content.endswith("6.8G\t/var/log/journal\n")
    assert (
        first.messages[4].content == "/var/log/journal uses the most space (6.8G)."
    )  # no reasoning
    assert (first.outcome.success, first.outcome.reward) == (True, 1.0)
    assert first.outcome.feedback == (
        "The answer contains the target /var/log/journal.\n"
        "Expected (the sample's target): /var/log/journal"
    )
    assert first.meta["task"] == "disk_triage" and first.meta["target"] == "/var/log/journal"
    assert first.meta["scores"]["model_graded_qa"]["value"] == "P"  # every scorer is kept
    # Attachments are resolved; an image shows as its kind; a tool error is part of the result.
    assert second.messages[0].content.endswith("outside the directory the user names.")
    assert second.messages[1].content.endswith("report how much space is free.\n[image]")
    assert second.messages[3].content == "Error (timeout): Command timed out before completing."
    assert (second.outcome.success, second.outcome.reward) == (False, 0.0)
    assert (third.outcome.success, third.outcome.reward) == (False, 0.25)
    assert third.meta["epoch"] == 2 and roles(third) == ["user", "assistant"]


@pytest.mark.parametrize("fmt", ["auto", "inspect"])
def test_an_inspect_json_log_reads_every_sample_and_epoch(fmt: str) -> None:
    assert detect_format(LOG) == "inspect"
    traces = load_traces([LOG], format=fmt)
    check_disk_triage(traces, LOG.stem)
    assert traces[0].source == f"{LOG}:samples[0]"


@pytest.mark.parametrize("fmt", ["auto", "inspect"])
def test_an_inspect_eval_archive_reads_as_its_json_log(tmp_path: Path, fmt: str) -> None:
    path = eval_archive(tmp_path / "disk-triage.eval", json.loads(LOG.read_text()))
    assert detect_format(path) == "inspect"
    traces = load_traces([path], format=fmt)
    check_disk_triage(traces, "disk-triage")
    assert traces[0].source == f"{path}:sample samples/1_epoch_1.json"
    # A log still being written has only the journal's start record; a folder finds both.
    eval_archive(tmp_path / "running.eval", json.loads(LOG.read_text()), header=False)
    assert len(load_traces([tmp_path / "running.eval"])) == 3
    (tmp_path / LOG.name).write_text(LOG.read_text())
    assert len(load_traces([tmp_path])) == 9


def test_zstandard_members_are_read_or_named_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = zstd_marked(eval_archive(tmp_path / "z.eval", json.loads(LOG.read_text())), bytes)
    monkeypatch.setattr(inspect_log, "_zstd_decompressor", lambda: bytes)
    check_disk_triage(load_traces([path]), "z")
    monkeypatch.setattr(inspect_log, "_zstd_decompressor", lambda: None)
    with pytest.raises(DatasetError) as caught:
        load_traces([path])
    assert str(caught.value).startswith(f"{path}: header.json: is compressed with Zstandard")
    assert "pip install zstandard" in str(caught.value)


def test_real_zstandard_frames_are_decompressed(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")

    def two_frames(data: bytes) -> bytes:  # Inspect splits large members into frames
        half = len(data) // 2
        return b"".join(zstandard.ZstdCompressor().compress(p) for p in (data[:half], data[half:]))

    path = zstd_marked(eval_archive(tmp_path / "z.eval", json.loads(LOG.read_text())), two_frames)
    check_disk_triage(load_traces([path]), "z")


def bad_log(**sample: Any) -> dict[str, Any]:
    log = json.loads(LOG.read_text())
    log["samples"] = [{**log["samples"][0], **sample}]
    return log


@pytest.mark.parametrize(
    ("name", "log", "message"),
    [
        (
            "role.json",
            bad_log(
                messages=[{"role": "user", "content": "hi"}, {"role": "robot", "content": "x"}]
            ),
            "role.json: samples[0]: message 1 has role 'robot'; expected one of system, user, "
            "assistant, tool",
        ),
        (
            "call.json",
            bad_log(messages=[{"role": "assistant", "content": "", "tool_calls": [{"id": "c"}]}]),
            "call.json: samples[0]: message 0 tool call 0 has no function name",
        ),
        (
            "list.eval",
            bad_log(messages="oops"),
            "list.eval: sample samples/1_epoch_1.json: messages must be a list, got str",
        ),
        ("noid.json", {**bad_log(), "samples": [{"epoch": 1}]}, "noid.json: samples[0] has no id"),
        ("noeval.json", {"version": 2, "samples": []}, "noeval.json: is not an Inspect eval log"),
    ],
)
def test_a_malformed_inspect_log_names_its_file_and_sample(
    tmp_path: Path, name: str, log: dict[str, Any], message: str
) -> None:
    path = tmp_path / name
    if name.endswith(".eval"):
        eval_archive(path, log)
    else:
        path.write_text(json.dumps(log))
    with pytest.raises(DatasetError) as caught:
        load_traces([path], format="inspect")
    assert str(caught.value).startswith(str(tmp_path / message))


def test_a_damaged_eval_archive_names_the_member(tmp_path: Path) -> None:
    path = eval_archive(tmp_path / "bad.eval", json.loads(LOG.read_text()))
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("samples/3_epoch_1.json", "{not json")
    with pytest.raises(DatasetError, match=r"bad\.eval: samples/3_epoch_1\.json: is not JSON \("):
        load_traces([path])
    (tmp_path / "plain.eval").write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip
    with pytest.raises(DatasetError, match=r"plain\.eval: has neither header\.json nor _journal"):
        load_traces([tmp_path / "plain.eval"], format="inspect")


# OpenTelemetry GenAI ---------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["auto", "otel"])
def test_otlp_json_spans_become_one_trace_per_genai_trace(fmt: str) -> None:
    assert detect_format(OTLP) == "otel"
    (trace,) = load_traces([OTLP], format=fmt)  # the health-check trace holds no GenAI spans
    assert trace.id == "7e1c9a4f2b8d4c6e9f0a1b2c3d4e5f60" and trace.task_id == "conv-paris-weekend"
    assert roles(trace) == ["system", "user", "assistant", "tool", "assistant"]
    assert trace.messages[0].content.startswith("You are a travel assistant.")
    (call,) = trace.messages[2].tool_calls
    assert (call.name, call.id) == ("get_weather", "call_wx_01")
    assert call.arguments == {"location": "Paris", "date": "2026-05-16"}
    result = trace.messages[3]
    assert result.tool_call_id == "call_wx_01"
    assert json.loads(result.content) == {
        "forecast": "rain",
        "precipitation_chance": 0.8,
        "high_c": 14,
    }
    assert trace.messages[4].content.startswith("Saturday looks fine for a picnic")
    assert (trace.outcome.success, trace.outcome.reward) == (False, 0.0)
    assert trace.outcome.feedback.startswith("The forecast said 80% chance of rain")
    assert trace.meta["models"] == ["gpt-4o"] and len(trace.meta["evaluations"]) == 1


def check_support_bot(trace: Trace) -> None:
    assert trace.task_id == "order-1042" and trace.id == "3c9d2e7f1a4b4c8d9e0f1a2b3c4d5e6f"
    assert roles(trace) == ["system", "user", "assistant", "tool", "assistant", "tool"]
    (lookup,) = trace.messages[2].tool_calls
    assert (lookup.name, lookup.arguments, lookup.id) == (
        "lookup_order",
        {"order_id": "1042"},
        "call_lookup_1",
    )
    assert trace.messages[3].tool_call_id == "call_lookup_1"
    assert '"days_since_delivery": 75' in trace.messages[3].content
    (refund,) = trace.messages[4].tool_calls
    assert refund.arguments == {"order_id": "1042", "reason": "arrived broken"}
    failed = trace.messages[5]
    assert (failed.tool_call_id, failed.name) == ("call_refund_1", "issue_refund")
    assert (
        failed.content == "Error: RefundWindowClosed: order 1042 is past the 30-day refund window"
    )
    assert (trace.outcome.success, trace.outcome.reward) == (False, 0.0)  # combee.reward
    assert trace.outcome.feedback.startswith("Tried a refund outside the 30-day window")


@pytest.mark.parametrize("fmt", ["auto", "otel"])
def test_sdk_span_json_lines_with_indexed_prompt_attributes(tmp_path: Path, fmt: str) -> None:
    assert detect_format(SPANS) == "otel"
    (trace,) = load_traces([SPANS], format=fmt)
    check_support_bot(trace)
    # ConsoleSpanExporter prints each span indented, one after another.
    printed = tmp_path / "console.json"
    records = [json.loads(line) for line in SPANS.read_text().splitlines()]
    printed.write_text("".join(json.dumps(r, indent=4) + "\n" for r in records))
    assert detect_format(printed) == "otel"
    check_support_bot(load_traces([printed], format=fmt)[0])


def sdk_span(name: str, span_id: str, start: str, **parts: Any) -> dict[str, Any]:
    return {
        "name": name,
        "context": {"trace_id": "0x00000000000000000000000000c0ffee", "span_id": span_id},
        "parent_id": None if span_id == "0x01" else "0x01",
        "start_time": f"2026-05-16T11:00:{start}Z",
        "status": {"status_code": "UNSET"},
        "attributes": parts.get("attributes", {}),
        "events": parts.get("events", []),
        "resource": {"attributes": {"service.name": "calc"}},
    }


def event(name: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "attributes": {"gen_ai.event.content": json.dumps(body)}}


def test_chats_without_history_are_joined_with_tool_spans_in_time_order(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "calculator"}}
    call["function"]["arguments"] = '{"expression": "0.17 * 240"}'
    spans = [
        sdk_span("agent", "0x01", "00.000000"),
        sdk_span(
            "chat",  # events and no operation name, as early instrumentations record
            "0x02",
            "00.100000",
            events=[
                event("gen_ai.system.message", {"content": "Answer with the calculator."}),
                event("gen_ai.user.message", {"content": "What is 17% of 240?"}),
                event("gen_ai.choice", {"index": 0, "message": {"tool_calls": [call]}}),
            ],
        ),
        sdk_span(
            "execute_tool calculator",
            "0x03",
            "01.000000",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "calculator",
                "gen_ai.tool.call.id": "c1",
                "gen_ai.tool.call.result": "40.8",
            },
        ),
        sdk_span(
            "chat",
            "0x04",
            "02.000000",
            attributes={"gen_ai.operation.name": "chat"},
            events=[
                event("gen_ai.tool.message", {"content": "40.8", "id": "c1"}),
                event("gen_ai.choice", {"message": {"content": "17% of 240 is 40.8."}}),
            ],
        ),
        sdk_span(
            "evaluate",
            "0x05",
            "03.000000",
            attributes={"gen_ai.evaluation.name": "exact", "gen_ai.evaluation.score.label": "pass"},
        ),
    ]
    path = tmp_path / "calc.jsonl"
    path.write_text("".join(json.dumps(span) + "\n" for span in spans[::-1]))
    (trace,) = load_traces([path])
    assert roles(trace) == ["system", "user", "assistant", "tool", "assistant"]
    assert trace.messages[2].tool_calls[0].arguments == {"expression": "0.17 * 240"}
    assert (trace.messages[3].content, trace.messages[3].name) == ("40.8", "calculator")
    assert trace.messages[4].content == "17% of 240 is 40.8."
    assert (trace.outcome.success, trace.outcome.reward) == (True, None)
    assert trace.task_id == "00000000000000000000000000c0ffee"  # no session: the trace id


def otlp_with(attributes: dict[str, str]) -> str:
    values = [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]
    span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "chat gpt-4o", "attributes": values}
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


CHAT = {"gen_ai.operation.name": "chat"}
SPAN0 = "resourceSpans[0].scopeSpans[0].spans[0] ('chat gpt-4o')"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "notjson.json",
            otlp_with({**CHAT, "gen_ai.input.messages": "[{'role': 'user'}]"}),
            f"notjson.json:1: {SPAN0}: gen_ai.input.messages is not JSON (",
        ),
        (
            "role.json",
            otlp_with({**CHAT, "gen_ai.input.messages": '[{"role": "robot", "parts": []}]'}),
            f"role.json:1: {SPAN0}: gen_ai.input.messages message 0 has role 'robot'; "
            "expected system, user, assistant or tool",
        ),
        (
            "line.jsonl",
            json.dumps(sdk_span("chat", "0x02", "00.100000")) + "\n{oops\n",
            "line.jsonl:2: is not JSON (Expecting property name",
        ),
        (
            "context.jsonl",
            '{"name": "chat", "context": {"span_id": "0x02"}}\n',
            "context.jsonl:1: span 'chat' has no context.trace_id",
        ),
        (
            "http.json",
            otlp_with({"http.request.method": "GET"}),
            "http.json: holds no GenAI messages: no span carries gen_ai.input.messages",
        ),
    ],
)
def test_malformed_spans_name_their_file_line_and_span(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(DatasetError) as caught:
        load_traces([path], format="otel")
    assert str(caught.value).startswith(str(tmp_path / message))


# Detection -------------------------------------------------------------------------------


def test_the_readers_claim_only_their_own_files(tmp_path: Path) -> None:
    ours = {"inspect": [LOG], "otel": [OTLP, SPANS]}
    eval_file = eval_archive(tmp_path / "x.eval", json.loads(LOG.read_text()))
    ours["inspect"].append(eval_file)
    openai = tmp_path / "chat.jsonl"
    openai.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    tau = tmp_path / "tau.json"
    tau.write_text(json.dumps([{"task_id": 1, "traj": [], "reward": 1}]))
    others = [
        openai,
        tau,
        *(
            p
            for p in DATA.rglob("*")
            if p.is_file() and p.parent.name not in {*ours, "otel-genai", "inspect-ai"}
        ),
    ]
    for name, files in ours.items():
        for path in files:
            assert [f for f in FORMATS if reader(f).sniff(path)] == [name], path
        assert not [p for p in others if reader(name).sniff(p)]
    assert len(load_traces([DATA / "inspect", DATA / "otel"])) == 5
