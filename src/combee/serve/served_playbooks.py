"""The playbook each namespace serves, read from the store one namespace at a time.

A namespace's active version is read (one indexed query, on a worker thread) when a request
first needs it, then kept until :meth:`ServedPlaybooks.forget` says the store changed. Forgetting
costs nothing per namespace: each is read again only when next asked for, so an idle namespace
costs nothing, and concurrent requests of one namespace share one read.

A namespace not yet in the store is made (its version 1, the starting playbook) unless the store
already holds ``max_namespaces``: then the request is refused (:class:`NamespaceRefused`). The
count kept here spares a full store a write per refusal; the store checks the bound again in the
write that makes the namespace, so gateways that share one store keep it between them.
"""

from __future__ import annotations

import asyncio

from combee.serve.http_errors import BadRequest
from combee.serve.records import PlaybookVersion
from combee.serve.store import TraceStore
from combee.serve.store_writes import NamespaceLimit, ensure_first


class NamespaceRefused(BadRequest):
    """A new namespace past the ``max_namespaces`` setting."""

    def __init__(self, namespace: str, most: int) -> None:
        super().__init__(
            f"agent namespace {namespace!r} is refused: the gateway keeps at most {most} "
            "namespaces (its max_namespaces setting, --max-namespaces), and the store holds "
            "that many; the namespaces there keep working",
            403,
        )


class ServedPlaybooks:
    """The active playbook of each namespace in use (see the module's docstring)."""

    def __init__(self, store: TraceStore, initial: str, max_namespaces: int) -> None:
        self._store = store
        self._initial = initial
        self._most = max_namespaces
        self._read: dict[str, asyncio.Future[PlaybookVersion | None]] = {}
        self._counted: int | None = None
        """Namespaces in the store as last counted (None: count again before making one)."""
        self._making = asyncio.Lock()

    async def active(self, namespace: str) -> PlaybookVersion | None:
        """The active version of ``namespace``; the namespace made when new."""
        reading = self._read.get(namespace)
        if reading is None:
            reading = self._read[namespace] = asyncio.ensure_future(self._active(namespace))
            reading.add_done_callback(lambda done: self._drop_failed(namespace, done))
        # Shielded: a request that goes away leaves the read to the others waiting on it.
        return await asyncio.shield(reading)

    def forget(self, namespace: str = "") -> None:
        """Read ``namespace`` ("": every namespace) from the store again when next asked for.
        Safe to call from any thread."""
        if namespace:
            self._read.pop(namespace, None)
        else:
            self._read = {}
        self._counted = None

    def _drop_failed(self, namespace: str, done: asyncio.Future[PlaybookVersion | None]) -> None:
        failed = done.cancelled() or done.exception() is not None
        if failed and self._read.get(namespace) is done:
            del self._read[namespace]

    async def _active(self, namespace: str) -> PlaybookVersion | None:
        found = await asyncio.to_thread(self._store.active, namespace)
        if found is None:
            await self._make(namespace)
            found = await asyncio.to_thread(self._store.active, namespace)
        return found

    async def _make(self, namespace: str) -> None:
        async with self._making:  # one at a time: the count stays true in this process
            if self._counted is None:
                self._counted = await asyncio.to_thread(self._store.namespace_count)
            if self._counted >= self._most:
                raise NamespaceRefused(namespace, self._most)
            try:  # the store checks the bound again: other gateways may share it
                await self._store.write_async(ensure_first(namespace, self._initial, self._most))
            except NamespaceLimit:
                self._counted = None
                raise NamespaceRefused(namespace, self._most) from None
            if self._counted is not None:  # None: forgotten meanwhile, counted again next time
                self._counted += 1
