"""The trace store's embedded database: one SQLite file in WAL mode, ``synchronous=FULL`` (a
committed write is on disk). A change to the playbooks made by another process is noticed by
polling ``PRAGMA data_version`` (cheap), then reading the ``playbook_changes`` rows its triggers
wrote; a learning round needs no lock across processes, since one gateway process owns the
file."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, closing, contextmanager
from pathlib import Path
from typing import cast

from combee.errors import ConfigError
from combee.serve.store_database import Db, Listener, StoreUnavailable, on_a_thread
from combee.serve.store_schema import SQLITE_SCHEMA, upgrade_sqlite

STORE_FILE = "traces.sqlite"

_POLL_S = 1.0
"""How often a watcher looks whether another process committed."""


class SqliteDatabase:
    """``traces.sqlite`` in ``folder``."""

    begin = "BEGIN IMMEDIATE"
    trace_order = "rowid"

    def __init__(self, folder: Path) -> None:
        self.path = folder / STORE_FILE
        self.name = str(self.path)
        try:
            with closing(self._open()) as connection:
                connection.executescript(SQLITE_SCHEMA)
                upgrade_sqlite(connection)
        except sqlite3.DatabaseError as error:
            raise ConfigError(
                f"{self.path} is not a trace store Combee can open ({error})", setting="store"
            ) from None

    def _open(self) -> sqlite3.Connection:
        connection = sqlite3.connect(
            self.path, timeout=30.0, isolation_level=None, check_same_thread=False
        )
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute("PRAGMA busy_timeout=30000")
        return connection

    def connect(self) -> Db:
        return cast(Db, self._open())

    @contextmanager
    def reading(self) -> Iterator[Db]:
        try:
            connection = self._open()
            try:
                yield cast(Db, connection)
            finally:
                connection.close()
        except sqlite3.OperationalError as error:
            raise StoreUnavailable(f"the trace store {self.path} cannot be read: {error}") from None

    def watch(self, listener: Listener) -> AbstractContextManager[None]:
        def poll(stop: threading.Event) -> None:
            with closing(self._open()) as connection:
                seen = _data_version(connection)
                last = _last_change(connection)
                while not stop.wait(_POLL_S):
                    now = _data_version(connection)
                    if now == seen:
                        continue
                    seen = now
                    rows = connection.execute(
                        "SELECT seq, namespace FROM playbook_changes WHERE seq > ? ORDER BY seq",
                        (last,),
                    ).fetchall()
                    for namespace in dict.fromkeys(str(row[1]) for row in rows):
                        listener(namespace)
                    if rows:
                        last = int(rows[-1][0])

        return on_a_thread(poll, "combee-store-watch")

    @contextmanager
    def round_lock(self, namespace: str) -> Iterator[bool]:
        yield True

    def close(self) -> None:
        pass


def _last_change(connection: sqlite3.Connection) -> int:
    row = connection.execute("SELECT COALESCE(MAX(seq), 0) FROM playbook_changes").fetchone()
    return int(row[0])


def _data_version(connection: sqlite3.Connection) -> int:
    """Changes when another connection commits."""
    return int(connection.execute("PRAGMA data_version").fetchone()[0])
