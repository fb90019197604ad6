"""The trace store's one writer thread: what has queued up is committed in one transaction
(group commit), so hundreds of concurrent requests share a commit rather than wait for one
each, and a caller's write returns once it is on disk.

A commit that fails (a full disk, a database that stopped or went away) fails the writes it held,
and only those: the thread lives on, opens a new connection for the next batch, and
:attr:`Writer.problem` says what is wrong until a commit succeeds again (:meth:`Writer.probe`
tries one with nothing queued, so a gateway can tell when the store is back)."""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from combee.serve.store_database import Database, Db, StoreUnavailable

Write = Callable[[Db], Any]
"""A write, run in the writer's transaction; what it returns is the write's result."""

_BATCH = 512
"""At most this many writes share one commit."""


class Writer:
    """The writer thread of ``database``."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self.problem: str | None = None
        """Why the last commit failed; None once one succeeds."""
        self._connection: Db | None = None
        self._queue: queue.SimpleQueue[tuple[Write, Future[Any]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write_loop, name="combee-store", daemon=True)
        self._thread.start()
        self.closed = False

    def submit(self, write: Write) -> Future[Any]:
        """Queue ``write``; the future resolves once the transaction is committed (on disk)."""
        if self.closed:
            raise RuntimeError("the trace store is closed")
        future: Future[Any] = Future()
        self._queue.put((write, future))
        return future

    def probe(self) -> Future[Any]:
        """A small write that commits only where the store can write (it touches a row)."""
        return self.submit(_touch)

    def close(self) -> None:
        """Finish the queued writes, then stop the thread."""
        if self.closed:
            return
        self.closed = True
        self._queue.put(None)
        self._thread.join()

    def _write_loop(self) -> None:
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
                self._commit(batch)
                if stop:
                    return
        finally:
            self._drop_connection()

    def _commit(self, batch: list[tuple[Write, Future[Any]]]) -> None:
        results: list[tuple[Future[Any], Any, BaseException | None]] = []
        try:
            if self._connection is None:
                self._connection = self.database.connect()
            connection = self._connection
            connection.execute(self.database.begin)
            for write, future in batch:
                connection.execute("SAVEPOINT one")
                try:
                    results.append((future, write(connection), None))
                    connection.execute("RELEASE one")
                except Exception as error:  # one bad write must not cost the others
                    connection.execute("ROLLBACK TO one")
                    connection.execute("RELEASE one")
                    results.append((future, None, error))
            connection.execute("COMMIT")
        except Exception as failed:  # the transaction is lost; the thread is not
            self.problem = (str(failed).strip().splitlines() or [type(failed).__name__])[0]
            self._drop_connection()
            unavailable = StoreUnavailable(
                f"the trace store {self.database.name} cannot write: {self.problem}"
            )
            for _, future in batch:
                future.set_exception(unavailable)
            return
        self.problem = None
        for future, value, problem in results:
            if problem is None:
                future.set_result(value)
            else:
                future.set_exception(problem)

    def _drop_connection(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(Exception):
                self._connection.execute("ROLLBACK")
            with contextlib.suppress(Exception):
                self._connection.close()
            self._connection = None


def _touch(db: Db) -> None:
    db.execute(
        "INSERT INTO store_health (id, checked) VALUES (1, ?)"
        " ON CONFLICT (id) DO UPDATE SET checked = excluded.checked",
        (time.time(),),
    )
