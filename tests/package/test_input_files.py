"""Input files are read with a bound (combee.files)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from combee.errors import ConfigError
from combee.files import read_bytes, read_setting_file, read_text


def test_a_file_within_the_limit_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text('{"q": "é"}\n' * 100, encoding="utf-8")
    assert read_text(path, limit=2000) == '{"q": "é"}\n' * 100
    packed = tmp_path / "data.jsonl.gz"
    packed.write_bytes(gzip.compress(path.read_bytes()))
    assert read_bytes(packed, limit=2000) == path.read_bytes()


def test_a_file_or_its_unpacked_content_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 101)
    with pytest.raises(OSError, match="more than 100 bytes"):
        read_bytes(path, limit=100)
    bomb = tmp_path / "bomb.txt.gz"
    bomb.write_bytes(gzip.compress(b"\0" * 10_000_000))  # about 10 KB on disk
    assert bomb.stat().st_size < 100_000
    with pytest.raises(OSError, match="more than 1,000,000 bytes"):
        read_bytes(bomb, limit=1_000_000)


def test_a_device_or_a_broken_gzip_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="is a device, not a file"):
        read_bytes("/dev/zero")
    broken = tmp_path / "cut.gz"
    broken.write_bytes(gzip.compress(b"abc" * 1000)[:20])
    with pytest.raises(OSError, match="is not a whole gzip file"):
        read_bytes(broken)


def test_a_setting_file_that_cannot_be_read_names_the_file_and_the_setting(
    tmp_path: Path,
) -> None:
    binary = tmp_path / "playbook.txt"
    binary.write_bytes(bytes(range(128, 256)))
    with pytest.raises(ConfigError) as raised:
        read_setting_file(binary, "playbook")
    assert raised.value.setting == "playbook"
    assert f"{binary}: is not UTF-8 text (byte 0)" in str(raised.value)
    with pytest.raises(ConfigError, match="cannot be read: No such file"):
        read_setting_file(tmp_path / "none.txt", "playbook")
