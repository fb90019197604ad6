"""A folder of trace files where some are broken: each broken file is skipped with its own
cause, named in the summary, and the rest are read; a file with a UTF-8 byte order mark is
read as UTF-8; a folder where every file is broken fails with those causes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from combee.errors import ConfigError, DatasetError
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.traces import read_traces
from tests.cli_helpers import run_combee

TRACE = {
    "messages": [
        {"role": "system", "content": "You are a booking agent."},
        {"role": "user", "content": "Book a flight to Paris."},
        {"role": "assistant", "content": "Booked."},
    ],
    "reward": 1,
}


def folder(tmp_path: Path) -> Path:
    found = tmp_path / "traces"
    found.mkdir()
    lines = "".join(json.dumps(TRACE) + "\n" for _ in range(3))
    (found / "good.jsonl").write_text(lines, encoding="utf-8")
    (found / "bom.jsonl").write_text(lines, encoding="utf-8-sig")
    (found / "utf16.json").write_text(json.dumps([TRACE]), encoding="utf-16")
    (found / "truncated.json").write_text(json.dumps([TRACE, TRACE])[:-40], encoding="utf-8")
    return found


def test_the_good_files_are_read_and_the_broken_ones_named_with_their_causes(
    tmp_path: Path,
) -> None:
    imported = read_traces([folder(tmp_path)])
    assert len(imported.traces) == 6 and imported.files == 2
    causes = {path.name: why for path, why in imported.skipped}
    assert causes == {
        "utf16.json": "is not UTF-8 text (it is UTF-16; save it as UTF-8)",
        "truncated.json": "not JSON: cut off at line 1 (the document ends unfinished)",
    }


def test_a_broken_file_named_on_its_own_is_an_error_with_its_cause(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"utf16\.json: is not UTF-8 text"):
        read_traces([folder(tmp_path) / "utf16.json"])


def test_a_folder_of_broken_files_fails_with_their_causes(tmp_path: Path) -> None:
    broken = folder(tmp_path)
    for name in ("good.jsonl", "bom.jsonl"):
        (broken / name).unlink()
    (broken / "empty.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        read_traces([broken])
    for cause in ("empty", "cut off at line 1", "it is UTF-16"):
        assert cause in str(raised.value)


def test_learn_on_the_folder_names_the_skipped_files_and_succeeds(tmp_path: Path) -> None:
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "learn", "--traces", str(folder(tmp_path)), "--model", "sim",
            "--base-url", server.base_url, "--out", str(tmp_path / "run"), "--no-cache",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    message = " ".join(result.stderr.split())
    assert "skipped 2 file(s)" in message
    assert "utf16.json (is not UTF-8 text (it is UTF-16; save it as UTF-8))" in message
    assert "truncated.json (not JSON: cut off at line 1" in message


def test_a_named_file_that_holds_no_trace_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "results.json"
    empty.write_text("[]", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"results\.json: read, no trace in it"):
        read_traces([empty], format="tau")


def test_a_tool_result_is_named_after_the_call_it_answers(tmp_path: Path) -> None:
    call = {
        "id": "call-1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": "{}"},
    }
    messages = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call-1", "content": "4C, rain"},
    ]
    path = tmp_path / "calls.jsonl"
    path.write_text(json.dumps({"messages": messages}) + "\n", encoding="utf-8")
    (trace,) = read_traces([path]).traces
    assert trace.messages[2].name == "get_weather"
