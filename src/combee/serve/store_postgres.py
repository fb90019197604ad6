"""The trace store on PostgreSQL (``--store postgresql://...``), for several gateway replicas
sharing one store, one learning round per namespace at a time, and one active playbook.

Writes commit with the server's durable default (``synchronous_commit``: acknowledged means on
disk). A version activated or rolled back by any replica reaches the others by ``LISTEN
combee_playbooks`` (the playbooks table's trigger notifies on commit); a learning round holds a
session-level advisory lock on its namespace, so a second replica's round of the same namespace
is refused while it runs. psycopg 3 is the driver (``pip install 'combee[postgres]'``).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import lru_cache
from typing import Any

from combee.errors import ConfigError
from combee.serve.store_database import Db, Listener, Rows, StoreUnavailable, on_a_thread
from combee.serve.store_schema import POSTGRES_SCHEMA

_CHANNEL = "combee_playbooks"
_CONNECT_TIMEOUT_S = 5
_REPOLL_S = 1.0
"""How long the listener waits between attempts when the server is away."""

URL = re.compile(r"postgres(ql)?://", re.IGNORECASE)


def is_postgres(location: str) -> bool:
    return bool(URL.match(location))


@lru_cache(maxsize=256)
def _format(sql: str) -> str:
    """The store's ``?`` parameters in psycopg's form."""
    return sql.replace("%", "%%").replace("?", "%s")


class PgDb:
    """A psycopg connection that takes the store's SQL as it is written."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection

    def execute(self, sql: str, parameters: Sequence[Any] = (), /) -> Rows:
        cursor: Rows = self.connection.execute(_format(sql), tuple(parameters) or None)
        return cursor

    def close(self) -> None:
        self.connection.close()


class PostgresDatabase:
    """The database at ``url`` (its tables made if they are not there)."""

    begin = "BEGIN"
    trace_order = "seq"

    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise ConfigError(
                "a PostgreSQL store needs psycopg: pip install 'combee[postgres]'",
                setting="store",
            ) from None
        self._psycopg = psycopg
        self.url = url
        self.name = _shown(url)
        with self._session() as connection:
            # Replicas starting at once would race to make the tables: one at a time.
            connection.execute("SELECT pg_advisory_lock(hashtext('combee schema'))")
            try:
                connection.execute(POSTGRES_SCHEMA)
            finally:
                connection.execute("SELECT pg_advisory_unlock(hashtext('combee schema'))")

    def _open(self) -> Any:
        try:
            return self._psycopg.connect(
                self.url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S
            )
        except self._psycopg.Error as error:
            raise ConfigError(
                f"cannot reach the PostgreSQL store {self.name}: {_first_line(error)}",
                setting="store",
            ) from None

    @contextmanager
    def _session(self) -> Iterator[Any]:
        connection = self._open()
        try:
            yield connection
        finally:
            connection.close()

    def connect(self) -> Db:
        return PgDb(self._open())

    @contextmanager
    def reading(self) -> Iterator[Db]:
        # A connection per read: reads are rare (a namespace's playbook once, a round's traces),
        # and a new connection finds a restarted server at once, where a pool backs off.
        try:
            connection = self._psycopg.connect(
                self.url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT_S
            )
            try:
                yield PgDb(connection)
            finally:
                connection.close()
        except self._psycopg.OperationalError as error:
            raise StoreUnavailable(
                f"the PostgreSQL store {self.name} cannot be read: {_first_line(error)}"
            ) from None

    def watch(self, listener: Listener) -> AbstractContextManager[None]:
        def listen(stop: threading.Event) -> None:
            while not stop.is_set():
                try:
                    connection = self._open()
                except ConfigError:
                    stop.wait(_REPOLL_S)
                    continue
                try:
                    connection.execute(f"LISTEN {_CHANNEL}")
                    listener("")  # what changed while nobody listened
                    while not stop.is_set():
                        for note in connection.notifies(timeout=_REPOLL_S):
                            listener(note.payload)
                except self._psycopg.Error:
                    stop.wait(_REPOLL_S)  # the server went away: listen again once it is back
                finally:
                    connection.close()

        return on_a_thread(listen, "combee-store-listen")

    @contextmanager
    def round_lock(self, namespace: str) -> Iterator[bool]:
        with self._session() as connection:
            key = f"combee round {namespace}"
            row = connection.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (key,))
            held = bool(row.fetchone()[0])
            try:
                yield held
            finally:
                if held:
                    connection.execute("SELECT pg_advisory_unlock(hashtext(%s))", (key,))

    def close(self) -> None:
        pass


def _shown(url: str) -> str:
    """``url`` without its password, for messages."""
    shown = re.sub(r"(?<=://)([^/@:\s]*)(:[^/@\s]*)?@", r"\1@", url)
    return re.sub(r"(?i)([?&]password=)[^&]*", r"\1***", shown)


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
