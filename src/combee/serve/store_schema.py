"""The trace store's tables, in SQLite's and in PostgreSQL's words, and the upgrade of a store an
earlier version made (:func:`upgrade_sqlite`, :data:`POSTGRES_UPGRADE`).

Both databases keep a change log of the playbooks, written by triggers, so a gateway hears of a
version activated or rolled back by another process: SQLite's ``playbook_changes`` table, read
when ``PRAGMA data_version`` moves; PostgreSQL's ``NOTIFY combee_playbooks``. At most one
version of a namespace is active (a unique index), whatever two writers do at once."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

_TABLES = """
CREATE TABLE IF NOT EXISTS exchanges (
    seq {serial},
    id TEXT NOT NULL UNIQUE,
    trace_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    created {real} NOT NULL,
    status INTEGER NOT NULL,
    playbook_version INTEGER,
    model TEXT NOT NULL,
    messages TEXT NOT NULL,
    reply TEXT,
    tools TEXT NOT NULL,
    chain_key TEXT NOT NULL,
    latency_s {real} NOT NULL
);
CREATE INDEX IF NOT EXISTS exchanges_by_trace ON exchanges (trace_id, seq);
CREATE TABLE IF NOT EXISTS traces (
    id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    session_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    created {real} NOT NULL{trace_seq}
);
CREATE INDEX IF NOT EXISTS traces_by_session ON traces (namespace, session_id);
CREATE TABLE IF NOT EXISTS feedback (
    seq {serial},
    trace_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    reward {real},
    success INTEGER,
    text TEXT NOT NULL,
    created {real} NOT NULL,
    trusted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS feedback_by_namespace ON feedback (namespace, seq);
CREATE TABLE IF NOT EXISTS playbooks (
    namespace TEXT NOT NULL,
    version INTEGER NOT NULL,
    text TEXT NOT NULL,
    created {real} NOT NULL,
    status TEXT NOT NULL,
    parent INTEGER,
    traces TEXT NOT NULL,
    provenance TEXT NOT NULL,
    check_result TEXT,
    note TEXT NOT NULL,
    PRIMARY KEY (namespace, version)
);
CREATE UNIQUE INDEX IF NOT EXISTS one_active_playbook ON playbooks (namespace)
    WHERE status = 'active';
CREATE TABLE IF NOT EXISTS watermarks (
    namespace TEXT PRIMARY KEY,
    feedback_seq INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS store_health (
    id INTEGER PRIMARY KEY,
    checked {real} NOT NULL
);
CREATE TABLE IF NOT EXISTS store_locks (
    name TEXT PRIMARY KEY,
    taken {real} NOT NULL
);
"""

SQLITE_SCHEMA = (
    _TABLES.format(serial="INTEGER PRIMARY KEY AUTOINCREMENT", real="REAL", trace_seq="")
    + """
CREATE TABLE IF NOT EXISTS playbook_changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL
);
CREATE TRIGGER IF NOT EXISTS playbook_added AFTER INSERT ON playbooks
BEGIN INSERT INTO playbook_changes (namespace) VALUES (NEW.namespace); END;
CREATE TRIGGER IF NOT EXISTS playbook_changed AFTER UPDATE ON playbooks
BEGIN INSERT INTO playbook_changes (namespace) VALUES (NEW.namespace); END;
"""
)

POSTGRES_SCHEMA = (
    _TABLES.format(
        serial="BIGSERIAL PRIMARY KEY",
        real="DOUBLE PRECISION",
        trace_seq=",\n    seq BIGSERIAL UNIQUE",
    )
    # Feedback rows are numbered in the order they commit, so a round that takes the rows after
    # its watermark never skips one that committed late with a lower number: the insert takes a
    # lock held to its commit, then its number.
    + """
CREATE OR REPLACE FUNCTION combee_feedback_numbered() RETURNS trigger AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('combee feedback'));
    NEW.seq := nextval(pg_get_serial_sequence('feedback', 'seq'));
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE OR REPLACE FUNCTION combee_playbook_changed() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('combee_playbooks', NEW.namespace);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE OR REPLACE TRIGGER feedback_numbered BEFORE INSERT ON feedback
    FOR EACH ROW EXECUTE FUNCTION combee_feedback_numbered();
CREATE OR REPLACE TRIGGER playbook_changed AFTER INSERT OR UPDATE ON playbooks
    FOR EACH ROW EXECUTE FUNCTION combee_playbook_changed();
"""
)

ADDED_COLUMNS = (("feedback", "trusted", "INTEGER NOT NULL DEFAULT 0"),)
"""Columns added since the first stores were made: (table, column, declaration). A feedback
report stored before ``trusted`` existed reads as untrusted: nothing says who sent it, and
before the gateway had two roles anyone it took could post feedback."""


def upgrade_sqlite(connection: sqlite3.Connection) -> None:
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


def to_json(value: Any) -> str:
    """``value`` as the compact JSON text a column holds."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
