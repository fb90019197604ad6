"""A SQLite response cache for replay, resume and cheap re-runs.

Keys are the sha256 of everything that determines a reply (see :func:`cache_key`), never the
API key. All SQLite work happens on one background thread; puts are queued and written in
batches so the event loop never waits for a disk commit.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sqlite3
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from combee.errors import ConfigError
from combee.llm.types import Completion, JsonMode, Request

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    completion TEXT NOT NULL
)
"""


def cache_key(request: Request, *, model: str, base_url: str | None, json_mode: JsonMode) -> str:
    """The sha256 of the request as it reaches the endpoint (no credentials)."""
    schema = request.json_schema
    payload: dict[str, Any] = {
        "model": model,
        "base_url": base_url,
        "messages": [_keyed(m) for m in request.messages],
        "temperature": request.temperature,
        "max_tokens": request.max_tokens,
        "schema": None if schema is None else [schema.name, schema.schema],
        "json_mode": json_mode,
        "seed": request.seed,
    }
    if request.tools or request.tool_choice is not None:  # keys of tool-free requests unchanged
        payload["tools"] = request.tools
        payload["tool_choice"] = request.tool_choice
    if request.unsent:  # the endpoint's defaults: another reply than Combee's settings give
        payload["unsent"] = sorted(request.unsent)
    encoded = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def _keyed(message: dict[str, Any]) -> object:
    """A plain text message as ``[role, content]`` (the key caches from before tool calls
    were carried hold), any other message as it is sent."""
    if len(message) == 2 and isinstance(message.get("content"), str):
        return (message["role"], message["content"])
    return message


logger = logging.getLogger(__name__)


class ResponseCache:
    """Completions by request key, stored in one SQLite file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="combee-cache")
        self._lock = threading.Lock()
        self._pending: dict[str, str] = {}
        self._flush_scheduled = False
        self._closed = False
        self._store_failed = False
        """A store failed already: it was said once, later failures stay silent."""
        try:
            self._db = self._executor.submit(self._open).result()
        except (sqlite3.Error, OSError) as error:
            self._executor.shutdown(wait=False)
            raise ConfigError(
                f"{self.path} cannot be used as the response cache ({error}); delete it or "
                "give another cache file",
                setting="cache",
            ) from None

    def _open(self) -> sqlite3.Connection:
        directory = os.path.dirname(self.path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        db = sqlite3.connect(self.path, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute(_SCHEMA)
        db.commit()
        return db

    async def get(self, key: str) -> Completion | None:
        """The completion stored under ``key`` (see :meth:`get_with_origin`)."""
        hit = await self.get_with_origin(key)
        return None if hit is None else hit[0]

    async def get_with_origin(self, key: str) -> tuple[Completion, str | None] | None:
        """The completion stored under ``key`` and the run that paid for it (None: not said)."""
        with self._lock:
            pending = self._pending.get(key)
        if pending is not None:
            return _decode(pending)
        if self._closed:
            return None
        loop = asyncio.get_running_loop()
        try:
            stored = await loop.run_in_executor(self._executor, self._read, key)
            return None if stored is None else _decode(stored)
        except (sqlite3.Error, ValueError, TypeError) as error:
            # A damaged row or file costs a call, never the iteration.
            logger.warning(
                "response cache %s: entry unreadable (%s); calling instead", self.path, error
            )
            return None

    async def put(self, key: str, completion: Completion, origin: str | None = None) -> None:
        """Store ``completion`` under ``key``; ``origin``: the run that paid for it."""
        fields = asdict(completion) | {"cached": False}
        if origin is not None:
            fields["origin"] = origin
        encoded = json.dumps(fields, ensure_ascii=False)
        with self._lock:
            if self._closed:
                return
            self._pending[key] = encoded
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        self._executor.submit(self._flush)

    def close(self) -> None:
        """Write what is queued and close the file; safe to call twice."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._executor.submit(self._flush).result()
        self._executor.submit(self._db.close).result()
        self._executor.shutdown(wait=True)

    def _read(self, key: str) -> str | None:
        row = self._db.execute("SELECT completion FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def _flush(self) -> None:
        with self._lock:
            batch = list(self._pending.items())
            self._flush_scheduled = False
        if not batch:
            return
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO responses (key, completion) VALUES (?, ?)", batch
                )
        except sqlite3.Error as error:  # read-only, full disk, damaged file: the run goes on
            if not self._store_failed:
                self._store_failed = True
                logger.warning(
                    "response cache %s: cannot store replies (%s); the run goes on, and "
                    "replies it cannot store will be asked again by a rerun",
                    self.path,
                    error,
                )
        with self._lock:
            for key, encoded in batch:
                if self._pending.get(key) == encoded:
                    del self._pending[key]


def _decode(encoded: str) -> tuple[Completion, str | None]:
    fields = json.loads(encoded)
    origin = fields.pop("origin", None)
    fields["cached"] = False
    fields["tool_calls"] = tuple(fields.get("tool_calls") or ())
    return Completion(**fields), origin if isinstance(origin, str) else None
