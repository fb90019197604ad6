"""The gateway's trace store, where acknowledged means durable: one SQLite file (the embedded
default) or a PostgreSQL database that several gateway replicas share (``postgresql://...``).

Every write goes through one writer thread that commits what has queued up in one transaction
(group commit, :mod:`combee.serve.store_writer`): a caller's write returns once it is on disk, and
hundreds of concurrent requests share a commit rather than wait for one each. Reads take a
connection of their own. The writes themselves are in :mod:`combee.serve.store_writes`; what
differs between the databases, in :mod:`combee.serve.store_sqlite` and
:mod:`combee.serve.store_postgres`.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from combee.errors import ConfigError
from combee.serve.records import Exchange, Feedback, PlaybookVersion
from combee.serve.store_database import Database, Db, Listener, StoreUnavailable
from combee.serve.store_postgres import PostgresDatabase, is_postgres
from combee.serve.store_sqlite import STORE_FILE, SqliteDatabase
from combee.serve.store_writer import Write, Writer

__all__ = ["STORE_FILE", "TraceStore"]

ROUNDS_FOLDER_OF_DATABASE = "combee-serve"
"""Where the learning rounds' run directories go when the store is a database and no folder is
named."""


class TraceStore:
    """The store at ``location``: a folder (created if needed) holding ``traces.sqlite``, or a
    ``postgresql://`` URL. ``folder`` holds the learning rounds' run directories (default: the
    store's folder; for a database, ``combee-serve``). Close it (or use it as a context manager)
    to stop its writer."""

    def __init__(
        self, location: str | os.PathLike[str], *, folder: str | os.PathLike[str] | None = None
    ) -> None:
        self.database: Database
        if isinstance(location, str) and is_postgres(location):
            self.database = PostgresDatabase(location)
            self.folder = Path(folder or ROUNDS_FOLDER_OF_DATABASE)
        else:
            store = Path(location)
            if store.exists() and not store.is_dir():
                raise ConfigError(f"{store} is a file, not a folder", setting="store")
            store.mkdir(parents=True, exist_ok=True)
            self.database = SqliteDatabase(store)
            self.folder = Path(folder) if folder else store
        self.name = self.database.name
        self._writer = Writer(self.database)

    def __enter__(self) -> TraceStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Finish the queued writes, then stop the writer."""
        self._writer.close()
        self.database.close()

    # --- writes ---------------------------------------------------------------------------

    def submit(self, write: Write) -> Future[Any]:
        """Queue ``write`` (run in the writer's transaction); the future resolves once the
        transaction is committed (on disk)."""
        return self._writer.submit(write)

    def write(self, write: Write) -> Any:
        """:meth:`submit` and wait."""
        return self.submit(write).result()

    async def write_async(self, write: Write) -> Any:
        return await asyncio.wrap_future(self.submit(write))

    @property
    def problem(self) -> str | None:
        """Why the store's last commit failed (a full disk, a database gone); None while it
        writes."""
        return self._writer.problem

    async def probe(self) -> bool:
        """Whether the store can write now (a small write committed); clears :attr:`problem`
        when it can."""
        try:
            await asyncio.wrap_future(self._writer.probe())
        except Exception:
            return False
        return True

    # --- changes made elsewhere -----------------------------------------------------------

    def watch(self, listener: Listener) -> AbstractContextManager[None]:
        """Call ``listener`` with a namespace ("": maybe any) each time another process (a
        replica, ``combee serve rollback``) changes its playbooks, while the block runs."""
        return self.database.watch(listener)

    def round_lock(self, namespace: str) -> AbstractContextManager[bool]:
        """The right to run ``namespace``'s learning round (False: another process has it)."""
        return self.database.round_lock(namespace)

    # --- reads ----------------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[Db]:
        """A connection for reads (:class:`StoreUnavailable` when the store cannot be read,
        which :attr:`problem` then reports until a write succeeds)."""
        try:
            with self.database.reading() as db:
                yield db
        except StoreUnavailable as failed:
            self._writer.problem = self._writer.problem or str(failed)
            raise

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
                f"SELECT id FROM traces WHERE namespace = ? ORDER BY {self.database.trace_order}",
                (namespace,),
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
                f" ORDER BY {self.database.trace_order} DESC LIMIT ?",
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
                "SELECT seq, trace_id, namespace, reward, success, text, created, trusted"
                " FROM feedback WHERE namespace = ? AND seq > ? ORDER BY seq",
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
                    trusted=bool(row[7]),
                ),
            )
            for row in rows
        ]

    def traces_with_new_feedback(self) -> dict[str, int]:
        """For each namespace with feedback after its watermark, how many traces it is for."""
        with self.reading() as db:
            rows = db.execute(
                "SELECT f.namespace, COUNT(DISTINCT f.trace_id) FROM feedback f"
                " LEFT JOIN watermarks w ON w.namespace = f.namespace"
                " WHERE f.seq > COALESCE(w.feedback_seq, 0) GROUP BY f.namespace ORDER BY 1"
            ).fetchall()
        return {str(namespace): int(count) for namespace, count in rows}

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

    def namespace_count(self) -> int:
        """How many namespaces have a playbook (every namespace the gateway has served)."""
        with self.reading() as db:
            row = db.execute("SELECT COUNT(DISTINCT namespace) FROM playbooks").fetchone()
        return int(row[0])

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
