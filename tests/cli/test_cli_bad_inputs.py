"""Inputs a user can get wrong end in one line naming the flag, never a traceback."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.cli_helpers import run_combee

NOWHERE = ("--model", "sim", "--base-url", "http://127.0.0.1:9/v1")


def one_clear_line(result: object, *needles: str) -> None:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.returncode != 0, stderr  # type: ignore[attr-defined]
    assert "Traceback" not in stderr
    for needle in needles:
        assert needle in stderr, stderr


@pytest.mark.parametrize(
    ("url", "needle"),
    [
        ("http://[::1", "--base-url is not a valid URL (Invalid IPv6 URL)"),
        ("http://127.0.0.1:99999/v1", "--base-url is not a valid URL (Port out of range"),
        ("notaurl", "--base-url must be an http:// or https:// URL"),
    ],
)
def test_a_broken_base_url(tmp_path: Path, url: str, needle: str) -> None:
    result = run_combee("train", "--model", "sim", "--base-url", url, "--out", str(tmp_path))
    one_clear_line(result, needle)


def test_a_binary_playbook(tmp_path: Path) -> None:
    binary = tmp_path / "playbook.txt"
    binary.write_bytes(bytes(range(128, 256)))
    trained = run_combee(
        "train", "--initial-playbook", str(binary), *NOWHERE, "--out", str(tmp_path / "r")
    )
    one_clear_line(trained, f"--initial-playbook {binary}: is not UTF-8 text")
    evaluated = run_combee("eval", "--playbook", str(binary), *NOWHERE)
    one_clear_line(evaluated, f"--playbook {binary}: is not UTF-8 text")
    assert "--initial-playbook" not in evaluated.stderr


def test_a_corrupt_gzip_trace_file(tmp_path: Path) -> None:
    whole = gzip.compress(b'{"messages": [{"role": "user", "content": "hi"}]}\n' * 500)
    cut = tmp_path / "traces.jsonl.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    result = run_combee("learn", "--traces", str(cut), *NOWHERE, "--out", str(tmp_path / "r"))
    one_clear_line(result, f"{cut}: cannot be read")


def test_a_gzip_trace_file_with_damaged_data(tmp_path: Path) -> None:
    damaged = bytearray(
        gzip.compress(b'{"messages": [{"role": "user", "content": "hi"}]}\n' * 2000)
    )
    for index in range(30, 60):
        damaged[index] ^= 0xFF
    path = tmp_path / "traces.jsonl.gz"
    path.write_bytes(bytes(damaged))
    result = run_combee("learn", "--traces", str(path), *NOWHERE, "--out", str(tmp_path / "r"))
    one_clear_line(result, f"{path}: cannot be read")


def test_a_port_out_of_range() -> None:
    result = run_combee("sim-server", "--port", "99999", timeout=30)
    one_clear_line(result, "--port")


def test_messages_name_the_flag_and_its_value(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text('{"question": "q", "answer": "a"}\n')
    scorer = run_combee("train", "--task", f"jsonl:{data}", "--scorer", "nope", *NOWHERE,
                        "--out", str(tmp_path / "a"))  # fmt: skip
    one_clear_line(scorer, "--scorer must be one of exact, numeric, contains")
    budget = run_combee("train", "--token-budget", "10", *NOWHERE, "--out", str(tmp_path / "b"))
    one_clear_line(budget, "--token-budget is 10", "or --token-budget 0 for no limit")
    assert "None" not in budget.stderr
    negative = run_combee("train", "--token-budget", "-1", *NOWHERE, "--out", str(tmp_path / "c"))
    one_clear_line(negative, "--token-budget must be a whole number of at least 1, or 0 for no")


@pytest.mark.parametrize(
    "flags",
    [
        ("train", "--task", "jsonl", "--data", "/dev/zero"),
        ("train", "--initial-playbook", "/dev/zero"),
        ("learn", "--traces", "/dev/zero"),
    ],
)
def test_a_device_is_refused_before_it_is_read(tmp_path: Path, flags: tuple[str, ...]) -> None:
    result = run_combee(*flags, *NOWHERE, "--out", str(tmp_path / "r"), timeout=120)
    one_clear_line(result, "/dev/zero", "is a device, not a file")
    assert not (tmp_path / "r" / "config.json").exists()


def test_an_input_file_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as out:  # sparse: nothing is written to the disk
        out.truncate((1 << 30) + 1)
    result = run_combee("train", "--task", "jsonl", "--data", str(huge), *NOWHERE, timeout=120)
    one_clear_line(result, str(huge), "the most one input file may hold")
