"""Fixtures of the gateway's tests."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.serve.postgres_server import PostgresServer


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    pytest.importorskip("psycopg")
    # Not under pytest's tmp_path: its folders are closed to the postgres user.
    folder = Path(tempfile.mkdtemp(prefix="combee-pg-"))
    try:
        server = PostgresServer(folder)
        try:
            yield server
        finally:
            with contextlib.suppress(AssertionError):  # stopped by the test
                server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
