"""A store that cannot write costs a request, not the gateway. On a real full disk (a small tmpfs),
the agent gets an OpenAI-shaped 503 and nothing is sent upstream, ``/readyz`` says not ready, and
once space is freed the gateway serves again by itself; every request that got a 200 is stored
once. The writer thread outlives a failed commit (the failure it held is reported to its writes,
and only to them)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sqlite3
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

import openai

from combee.serve import serve_settings
from combee.serve.running import GatewayThread, create_gateway
from combee.serve.store_database import StoreUnavailable
from combee.serve.store_writer import Writer
from combee.sim import serve_in_thread
from tests.tasks.test_tool_agent import weather_model

BIG = "x" * 150_000
"""A message large enough that a few of them outgrow what a full disk's WAL has left."""


@contextlib.contextmanager
def small_disk(size_mb: int) -> Iterator[Path]:
    """A tmpfs of ``size_mb``; the test skips where one cannot be mounted (not root)."""
    folder = Path(tempfile.mkdtemp(prefix="combee-full-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
        folder.rmdir()


def fill(folder: Path) -> Path:
    """A file that takes every free byte of ``folder``'s filesystem."""
    ballast = folder / "ballast"
    with open(ballast, "wb") as out:
        chunk = b"\0" * 65536
        try:
            while True:
                out.write(chunk)
                out.flush()
        except OSError as full:
            assert full.errno == errno.ENOSPC
    with contextlib.suppress(OSError), open(folder / "ballast2", "wb") as out:  # the last bytes
        while True:
            out.write(b"\0")
            out.flush()
    return ballast


def chat(base_url: str, marker: str, content: str = "", stream: bool = False) -> tuple[int, str]:
    """One request: its status and the error's message ("" on success)."""
    client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=120)
    try:
        messages = [{"role": "user", "content": f"{content} request {marker}"}]
        if stream:
            for _ in client.chat.completions.create(
                model="sim",
                messages=messages,
                stream=True,  # type: ignore[arg-type]
            ):
                pass
        else:
            client.chat.completions.create(model="sim", messages=messages)  # type: ignore[arg-type]
        return 200, ""
    except openai.APIStatusError as refused:
        return refused.status_code, refused.message
    except openai.APIError as broken:  # an error event ended the stream
        return 0, broken.message
    finally:
        client.close()


def get(url: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


def stored_markers(store: Path) -> list[str]:
    with contextlib.closing(sqlite3.connect(store / "traces.sqlite")) as db:
        rows = db.execute("SELECT messages FROM exchanges").fetchall()
    return [json.loads(row[0])[0]["content"].split()[-1] for row in rows]


def test_a_full_disk_answers_503_and_the_gateway_recovers_when_space_is_freed() -> None:
    with small_disk(6) as disk, serve_in_thread(weather_model) as upstream:
        store = disk / "store"
        _, asgi = create_gateway(upstream.base_url, settings=serve_settings(store=str(store)))
        with GatewayThread(asgi) as gateway:
            answered = []
            for n in range(3):
                assert chat(gateway.base_url, f"a{n}") == (200, "")
                answered.append(f"a{n}")
            ballast = fill(disk)
            refused = None
            for n in range(40):  # a WAL page or two may still be free: write until it is not
                status, message = chat(gateway.base_url, f"f{n}", BIG)
                if status == 200:
                    answered.append(f"f{n}")
                    continue
                refused = (status, message)
                break
            assert refused is not None and refused[0] == 503, refused
            assert "could not be stored" in refused[1]

            sent = len(upstream.records)
            status, message = chat(gateway.base_url, "g0")
            assert status == 503 and "cannot write" in message and "retry" in message
            assert chat(gateway.base_url, "g1", stream=True)[0] == 503
            assert len(upstream.records) == sent  # refused before anything went upstream
            ready, why = get(gateway.url + "/readyz")
            assert ready == 503 and why["ready"] is False and "cannot write" in why["why"]
            alive, health = get(gateway.url + "/healthz")
            assert alive == 200 and health["store"] != "ok"

            ballast.unlink()
            (disk / "ballast2").unlink()
            assert chat(gateway.base_url, "r0") == (200, "")  # no restart
            assert chat(gateway.base_url, "r1", stream=True) == (200, "")
            answered += ["r0", "r1"]
            assert get(gateway.url + "/readyz")[0] == 200
        markers = stored_markers(store)
    for marker in answered:
        assert markers.count(marker) == 1, marker
    assert not {"g0", "g1"} & set(markers)


class FailingCommits:
    """A database whose commits fail while ``full`` is set, as SQLite's do on a full disk."""

    begin = "BEGIN IMMEDIATE"
    trace_order = "rowid"
    name = "in memory"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.full = False
        with contextlib.closing(sqlite3.connect(path)) as db:
            db.execute("CREATE TABLE t (n INTEGER)")
            db.execute("CREATE TABLE store_health (id INTEGER PRIMARY KEY, checked REAL)")
            db.commit()

    def connect(self) -> Any:
        outer = self
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)

        class Connection:
            def execute(self, sql: str, parameters: Any = ()) -> Any:
                if sql == "COMMIT" and outer.full:
                    raise sqlite3.OperationalError("database or disk is full")
                return connection.execute(sql, parameters)

            def close(self) -> None:
                connection.close()

        return Connection()


def test_the_writer_outlives_a_failed_commit_and_fails_only_the_writes_it_held(
    tmp_path: Path,
) -> None:
    database = FailingCommits(tmp_path / "t.sqlite")
    writer = Writer(database)  # type: ignore[arg-type]
    try:

        def insert(n: int) -> Any:
            return lambda db: db.execute("INSERT INTO t (n) VALUES (?)", (n,))

        writer.submit(insert(1)).result(timeout=30)
        database.full = True
        failed: Future[Any] = writer.submit(insert(2))
        with pytest.raises(StoreUnavailable, match="in memory cannot write: database or disk"):
            failed.result(timeout=30)
        assert writer.problem is not None and "full" in writer.problem
        with pytest.raises(StoreUnavailable):
            writer.probe().result(timeout=30)
        database.full = False
        writer.probe().result(timeout=30)
        assert writer.problem is None
        writer.submit(insert(3)).result(timeout=30)
    finally:
        writer.close()
    with contextlib.closing(sqlite3.connect(database.path)) as db:
        assert [row[0] for row in db.execute("SELECT n FROM t ORDER BY n")] == [1, 3]
    assert not os.path.exists(str(database.path) + "-journal")
