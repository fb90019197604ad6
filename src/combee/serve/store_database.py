"""What the trace store needs of a database: the seam between the store and SQLite or PostgreSQL.

The store's reads and writes are SQL written once, with ``?`` for parameters, that both databases
run as it is (``INSERT ... ON CONFLICT``, ``RETURNING``, no ``rowid``); what differs (connecting,
the schema's column types, how a change made by another process is noticed, how two processes
keep from running one namespace's learning round at once) is a :class:`Database`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol

from combee.errors import CombeeError


class StoreUnavailable(CombeeError):
    """The store could not be read (its database stopped, went away, or its disk failed)."""


class Rows(Protocol):
    """A statement's result rows."""

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    """One open connection, in autocommit mode: a transaction is ``BEGIN`` ... ``COMMIT``."""

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Rows: ...

    def close(self) -> None: ...


Listener = Callable[[str], None]
"""Told the namespace whose playbooks another process changed ("": maybe any)."""


class Database(Protocol):
    """A place the store keeps its tables."""

    name: str
    """Where it is, for messages (no password)."""

    begin: str
    """The statement that opens a write transaction."""

    trace_order: str
    """The column that orders the traces table by insertion."""

    def connect(self) -> Db:
        """A new connection (the schema in place)."""
        ...

    def reading(self) -> AbstractContextManager[Db]:
        """A connection for reads, given back when the block ends."""
        ...

    def watch(self, listener: Listener) -> AbstractContextManager[None]:
        """Call ``listener`` (on a thread of its own) while the block runs, each time another
        connection commits a change to the playbooks."""
        ...

    def round_lock(self, namespace: str) -> AbstractContextManager[bool]:
        """Hold the right to run ``namespace``'s learning round while the block runs; the block
        gets False when another process holds it."""
        ...

    def close(self) -> None: ...


@contextmanager
def on_a_thread(watch: Callable[[threading.Event], None], name: str) -> Iterator[None]:
    """``watch(stop)`` on a thread of its own while the block runs; ``stop`` is set when the
    block ends, and the thread is waited for."""
    stop = threading.Event()
    thread = threading.Thread(target=watch, args=(stop,), name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10.0)
