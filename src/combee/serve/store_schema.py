"""The trace store's SQLite file: its tables, each connection's settings (WAL, and
``synchronous=FULL``: a committed write is on disk), and the upgrade of a store an earlier
version made (:func:`upgrade`)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

STORE_FILE = "traces.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS exchanges (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    trace_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    created REAL NOT NULL,
    status INTEGER NOT NULL,
    playbook_version INTEGER,
    model TEXT NOT NULL,
    messages TEXT NOT NULL,
    reply TEXT,
    tools TEXT NOT NULL,
    chain_key TEXT NOT NULL,
    latency_s REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS exchanges_by_trace ON exchanges (trace_id, seq);
CREATE TABLE IF NOT EXISTS traces (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    session_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS traces_by_session ON traces (namespace, session_id);
CREATE TABLE IF NOT EXISTS feedback (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    trace_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    reward REAL,
    success INTEGER,
    text TEXT NOT NULL,
    created REAL NOT NULL,
    trusted INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS playbooks (
    namespace TEXT NOT NULL,
    version INTEGER NOT NULL,
    text TEXT NOT NULL,
    created REAL NOT NULL,
    status TEXT NOT NULL,
    parent INTEGER,
    traces TEXT NOT NULL,
    provenance TEXT NOT NULL,
    check_result TEXT,
    note TEXT NOT NULL,
    PRIMARY KEY (namespace, version)
);
CREATE TABLE IF NOT EXISTS watermarks (
    namespace TEXT PRIMARY KEY,
    feedback_seq INTEGER NOT NULL
);
"""


ADDED_COLUMNS = (("feedback", "trusted", "INTEGER NOT NULL DEFAULT 0"),)
"""Columns added since the first stores were made: (table, column, declaration). A feedback
report stored before ``trusted`` existed reads as untrusted: nothing says who sent it, and
before the gateway had two roles anyone it took could post feedback."""


def upgrade(connection: sqlite3.Connection) -> None:
    """Add the :data:`ADDED_COLUMNS` a store lacks, in one transaction (another process
    upgrading the same store at once waits for it, then finds them)."""
    if not _missing(connection):
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        for table, column, declaration in _missing(connection):
            connection.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        connection.execute("COMMIT")
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _missing(connection: sqlite3.Connection) -> list[tuple[str, str, str]]:
    found = []
    for table, column, declaration in ADDED_COLUMNS:
        have = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        if column not in have:
            found.append((table, column, declaration))
    return found


def connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("PRAGMA busy_timeout=30000")
    return connection


def to_json(value: Any) -> str:
    """``value`` as the compact JSON text a column holds."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
