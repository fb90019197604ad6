"""The gateway's trace store: one SQLite file, where acknowledged means durable.

Every write goes through one writer thread that commits what has queued up in one transaction
(group commit, ``synchronous=FULL`` in WAL mode): a caller's write returns once it is on disk, and
hundreds of concurrent requests share a commit rather than wait for one each. Reads open their own
connection. A playbook version, its activation and the learning watermark are written in one
transaction, so a crash never leaves a half-written or half-activated playbook.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any, TypeVar

from combee.errors import ConfigError
from combee.serve.records import Exchange, Feedback, PlaybookVersion

STORE_FILE = "traces.sqlite"
T = TypeVar("T")
Write = Callable[[sqlite3.Connection], Any]

_SCHEMA = """
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

_BATCH = 512
"""At most this many writes share one commit."""


def _connect(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("PRAGMA busy_timeout=30000")
    return connection


class TraceStore:
    """The store in ``folder`` (created if needed): ``traces.sqlite`` and the learning rounds'
    run directories beside it. Close it (or use it as a context manager) to stop its writer."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        if self.folder.exists() and not self.folder.is_dir():
            raise ConfigError(f"{self.folder} is a file, not a folder", setting="store")
        self.folder.mkdir(parents=True, exist_ok=True)
        self.path = self.folder / STORE_FILE
        try:
            with closing(_connect(self.path)) as connection:
                connection.executescript(_SCHEMA)
        except sqlite3.DatabaseError as error:
            raise ConfigError(
                f"{self.path} is not a trace store Combee can open ({error})", setting="store"
            ) from None
        self._queue: queue.SimpleQueue[tuple[Write, Future[Any]] | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_loop, name="combee-store", daemon=True)
        self._writer.start()
        self._closed = False

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Finish the queued writes, then stop the writer."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._writer.join()

    # --- writes ---------------------------------------------------------------------------

    def submit(self, write: Write) -> Future[Any]:
        """Queue ``write`` (run in the writer's transaction); the future resolves once the
        transaction is committed (on disk)."""
        if self._closed:
            raise RuntimeError("the trace store is closed")
        future: Future[Any] = Future()
        self._queue.put((write, future))
        return future

    def write(self, write: Write) -> Any:
        """:meth:`submit` and wait."""
        return self.submit(write).result()

    async def write_async(self, write: Write) -> Any:
        return await asyncio.wrap_future(self.submit(write))

    def _write_loop(self) -> None:
        connection = _connect(self.path)
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batch = [first]
                stop = False
                while len(batch) < _BATCH:
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if item is None:
                        stop = True
                        break
                    batch.append(item)
                self._commit(connection, batch)
                if stop:
                    return
        finally:
            connection.close()

    @staticmethod
    def _commit(connection: sqlite3.Connection, batch: list[tuple[Write, Future[Any]]]) -> None:
        results: list[tuple[Future[Any], Any, BaseException | None]] = []
        connection.execute("BEGIN IMMEDIATE")
        for write, future in batch:
            connection.execute("SAVEPOINT one")
            try:
                results.append((future, write(connection), None))
                connection.execute("RELEASE one")
            except Exception as error:  # one bad write must not cost the others
                connection.execute("ROLLBACK TO one")
                connection.execute("RELEASE one")
                results.append((future, None, error))
        try:
            connection.execute("COMMIT")
        except sqlite3.Error as failed:
            connection.execute("ROLLBACK")
            for future, _, _ in results:
                future.set_exception(failed)
            return
        for future, value, problem in results:
            if problem is None:
                future.set_result(value)
            else:
                future.set_exception(problem)

    # --- reads ----------------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection of its own, for reads."""
        connection = _connect(self.path)
        try:
            yield connection
        finally:
            connection.close()

    def exchanges(self, trace_id: str) -> list[Exchange]:
        with self.reading() as db:
            rows = db.execute(
                "SELECT e.id, e.trace_id, e.namespace, e.created, e.messages, e.reply, e.status,"
                " e.playbook_version, e.model, e.tools, e.chain_key, t.session_id, t.task_id,"
                " e.latency_s FROM exchanges e LEFT JOIN traces t ON t.id = e.trace_id"
                " WHERE e.trace_id = ? ORDER BY e.seq",
                (trace_id,),
            ).fetchall()
        return [_exchange(row) for row in rows]

    def count(self, table: str) -> int:
        if table not in ("exchanges", "traces", "feedback", "playbooks"):
            raise ValueError(table)
        with self.reading() as db:
            return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    def trace_ids(self, namespace: str) -> list[str]:
        """The traces of ``namespace``, oldest first."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT id FROM traces WHERE namespace = ? ORDER BY rowid", (namespace,)
            ).fetchall()
        return [str(row[0]) for row in rows]

    def exchange_ids(self) -> list[str]:
        with self.reading() as db:
            return [row[0] for row in db.execute("SELECT id FROM exchanges ORDER BY seq")]

    def trace_namespace(self, trace_id: str) -> str | None:
        with self.reading() as db:
            row = db.execute("SELECT namespace FROM traces WHERE id = ?", (trace_id,)).fetchone()
        return None if row is None else str(row[0])

    def session_traces(self, limit: int) -> list[tuple[str, str, str]]:
        """``(namespace, session_id, trace_id)`` of the latest ``limit`` traces with a session."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT namespace, session_id, id FROM traces WHERE session_id != ''"
                " ORDER BY rowid DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [(str(a), str(b), str(c)) for a, b, c in reversed(rows)]

    def chain_keys(self, limit: int) -> list[tuple[str, str, str]]:
        """``(namespace, chain_key, trace_id)`` of the latest ``limit`` exchanges."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT namespace, chain_key, trace_id FROM exchanges ORDER BY seq DESC LIMIT ?",
                (limit,),
            ).fetchall()
        return [(str(a), str(b), str(c)) for a, b, c in reversed(rows)]

    def feedback_after(self, namespace: str, seq: int) -> list[tuple[int, Feedback]]:
        """The outcomes reported in ``namespace`` after feedback row ``seq``, in order."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT seq, trace_id, namespace, reward, success, text, created FROM feedback"
                " WHERE namespace = ? AND seq > ? ORDER BY seq",
                (namespace, seq),
            ).fetchall()
        return [
            (
                int(row[0]),
                Feedback(
                    trace_id=row[1],
                    namespace=row[2],
                    reward=row[3],
                    success=None if row[4] is None else bool(row[4]),
                    text=row[5],
                    created=row[6],
                ),
            )
            for row in rows
        ]

    def watermark(self, namespace: str) -> int:
        """The last feedback row a learning round of ``namespace`` has taken in (0: none)."""
        with self.reading() as db:
            row = db.execute(
                "SELECT feedback_seq FROM watermarks WHERE namespace = ?", (namespace,)
            ).fetchone()
        return 0 if row is None else int(row[0])

    def namespaces(self) -> list[str]:
        with self.reading() as db:
            rows = db.execute(
                "SELECT namespace FROM traces UNION SELECT namespace FROM playbooks ORDER BY 1"
            ).fetchall()
        return [str(row[0]) for row in rows]

    def versions(self, namespace: str) -> list[PlaybookVersion]:
        with self.reading() as db:
            rows = db.execute(
                "SELECT namespace, version, text, created, status, parent, traces, provenance,"
                " check_result, note FROM playbooks WHERE namespace = ? ORDER BY version",
                (namespace,),
            ).fetchall()
        return [_version(row) for row in rows]

    def active(self, namespace: str) -> PlaybookVersion | None:
        with self.reading() as db:
            row = db.execute(
                "SELECT namespace, version, text, created, status, parent, traces, provenance,"
                " check_result, note FROM playbooks WHERE namespace = ? AND status = 'active'",
                (namespace,),
            ).fetchone()
        return None if row is None else _version(row)

    def data_version(self, connection: sqlite3.Connection) -> int:
        """Changes when another connection commits (a cheap poll for a new active version)."""
        return int(connection.execute("PRAGMA data_version").fetchone()[0])


# --- the writes the gateway and the learner make --------------------------------------------


def record_exchange(exchange: Exchange) -> Write:
    def write(db: sqlite3.Connection) -> None:
        db.execute(
            "INSERT OR IGNORE INTO traces (id, namespace, session_id, task_id, created)"
            " VALUES (?, ?, ?, ?, ?)",
            (
                exchange.trace_id,
                exchange.namespace,
                exchange.session_id,
                exchange.task_id or exchange.trace_id,
                exchange.created,
            ),
        )
        db.execute(
            "INSERT INTO exchanges (id, trace_id, namespace, created, status, playbook_version,"
            " model, messages, reply, tools, chain_key, latency_s)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                exchange.id,
                exchange.trace_id,
                exchange.namespace,
                exchange.created,
                exchange.status,
                exchange.playbook_version,
                exchange.model,
                _json(exchange.messages),
                None if exchange.reply is None else _json(exchange.reply),
                _json(exchange.tools),
                exchange.chain_key,
                exchange.latency_s,
            ),
        )

    return write


def record_feedback(feedback: Feedback) -> Write:
    def write(db: sqlite3.Connection) -> int:
        cursor = db.execute(
            "INSERT INTO feedback (trace_id, namespace, reward, success, text, created)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (
                feedback.trace_id,
                feedback.namespace,
                feedback.reward,
                None if feedback.success is None else int(feedback.success),
                feedback.text,
                feedback.created or time.time(),
            ),
        )
        return int(cursor.lastrowid or 0)

    return write


def add_version(version: PlaybookVersion, *, activate: bool, watermark: int | None = None) -> Write:
    """Store ``version`` (its number is the next free one; the write returns it), make it the
    active one when ``activate``, and move the namespace's watermark, all in one transaction."""

    def write(db: sqlite3.Connection) -> int:
        row = db.execute(
            "SELECT COALESCE(MAX(version), 0) FROM playbooks WHERE namespace = ?",
            (version.namespace,),
        ).fetchone()
        number = int(row[0]) + 1
        if activate:
            db.execute(
                "UPDATE playbooks SET status = 'retired' WHERE namespace = ? AND status = 'active'",
                (version.namespace,),
            )
        db.execute(
            "INSERT INTO playbooks (namespace, version, text, created, status, parent, traces,"
            " provenance, check_result, note) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                version.namespace,
                number,
                version.text,
                version.created or time.time(),
                "active" if activate else version.status,
                version.parent,
                _json(list(version.traces)),
                _json({k: list(v) for k, v in version.provenance.items()}),
                None if version.check is None else _json(version.check),
                version.note,
            ),
        )
        if watermark is not None:
            db.execute(
                "INSERT INTO watermarks (namespace, feedback_seq) VALUES (?, ?)"
                " ON CONFLICT (namespace) DO UPDATE SET feedback_seq = excluded.feedback_seq",
                (version.namespace, watermark),
            )
        return number

    return write


def ensure_first(namespace: str, text: str) -> Write:
    """Version 1 of ``namespace``, the starting playbook ``text`` (maybe empty), stored and
    active unless the namespace has a version already."""

    def write(db: sqlite3.Connection) -> None:
        db.execute(
            "INSERT INTO playbooks (namespace, version, text, created, status, parent, traces,"
            " provenance, check_result, note) SELECT ?, 1, ?, ?, 'active', NULL, '[]', '{}',"
            " NULL, 'the starting playbook' WHERE NOT EXISTS"
            " (SELECT 1 FROM playbooks WHERE namespace = ?)",
            (namespace, text, time.time(), namespace),
        )

    return write


def set_watermark(namespace: str, seq: int) -> Write:
    def write(db: sqlite3.Connection) -> None:
        db.execute(
            "INSERT INTO watermarks (namespace, feedback_seq) VALUES (?, ?)"
            " ON CONFLICT (namespace) DO UPDATE SET feedback_seq = excluded.feedback_seq",
            (namespace, seq),
        )

    return write


def activate_version(namespace: str, version: int) -> Write:
    """Make ``version`` the active playbook of ``namespace`` (a rollback, or a refused
    version put in by hand); the one active before is retired."""

    def write(db: sqlite3.Connection) -> None:
        found = db.execute(
            "SELECT status FROM playbooks WHERE namespace = ? AND version = ?",
            (namespace, version),
        ).fetchone()
        if found is None:
            known = [
                str(r[0])
                for r in db.execute(
                    "SELECT version FROM playbooks WHERE namespace = ? ORDER BY version",
                    (namespace,),
                )
            ]
            raise ConfigError(
                f"namespace {namespace!r} has no playbook version {version} "
                f"(versions: {', '.join(known) or 'none yet'})",
                setting="version",
            )
        db.execute(
            "UPDATE playbooks SET status = 'retired' WHERE namespace = ? AND status = 'active'",
            (namespace,),
        )
        db.execute(
            "UPDATE playbooks SET status = 'active' WHERE namespace = ? AND version = ?",
            (namespace, version),
        )

    return write


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _exchange(row: Sequence[Any]) -> Exchange:
    return Exchange(
        id=row[0],
        trace_id=row[1],
        namespace=row[2],
        created=row[3],
        messages=json.loads(row[4]),
        reply=None if row[5] is None else json.loads(row[5]),
        status=row[6],
        playbook_version=row[7],
        model=row[8],
        tools=json.loads(row[9]),
        chain_key=row[10],
        session_id=row[11] or "",
        task_id=row[12] or "",
        latency_s=row[13],
    )


def _version(row: Sequence[Any]) -> PlaybookVersion:
    provenance: Mapping[str, Sequence[str]] = json.loads(row[7])
    return PlaybookVersion(
        namespace=row[0],
        version=row[1],
        text=row[2],
        created=row[3],
        status=row[4],
        parent=row[5],
        traces=json.loads(row[6]),
        provenance=provenance,
        check=None if row[8] is None else json.loads(row[8]),
        note=row[9],
    )
