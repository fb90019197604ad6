"""The trace store's one writer thread: what has queued up is committed in one transaction
(group commit), so hundreds of concurrent requests share a commit rather than wait for one
each, and a caller's write returns once it is on disk."""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from combee.serve.store_schema import connect

Write = Callable[[sqlite3.Connection], Any]
"""A write, run in the writer's transaction; what it returns is the write's result."""

_BATCH = 512
"""At most this many writes share one commit."""


class Writer:
    """The writer thread of the SQLite file at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
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

    def close(self) -> None:
        """Finish the queued writes, then stop the thread."""
        if self.closed:
            return
        self.closed = True
        self._queue.put(None)
        self._thread.join()

    def _write_loop(self) -> None:
        connection = connect(self.path)
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
