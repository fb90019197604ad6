"""The trace store's SQLite file: its tables, and each connection's settings (WAL, and
``synchronous=FULL``: a committed write is on disk)."""

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
    created REAL NOT NULL
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


def connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("PRAGMA busy_timeout=30000")
    return connection


def to_json(value: Any) -> str:
    """``value`` as the compact JSON text a column holds."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
