"""Synchronous entry points over the async library."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], *, async_name: str) -> T:
    """Run ``coro`` to its end from synchronous code. Inside a running event loop (a notebook,
    an async app) it runs on a loop of its own in a worker thread while the caller waits; an
    async caller that must not block its loop awaits ``async_name`` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return _in_worker_thread(coro, name=async_name)


def _in_worker_thread(coro: Coroutine[Any, Any, T], *, name: str) -> T:
    """Run ``coro`` on a new loop in another thread and wait for it. The thread sees the
    caller's context variables (a notebook kernel uses them to send output to the right cell).
    Ctrl-C (a notebook's interrupt) cancels the run, as it does under ``asyncio.run``."""
    run = _WorkerRun(coro)
    worker = threading.Thread(target=contextvars.copy_context().run, args=(run.work,), name=name)
    worker.start()
    try:
        worker.join()
    except KeyboardInterrupt:
        run.cancel()
        worker.join()
        raise
    if run.error is not None:
        raise run.error
    return run.result[0]


class _WorkerRun(Generic[T]):
    def __init__(self, coro: Coroutine[Any, Any, T]) -> None:
        self.coro = coro
        self.result: list[T] = []
        self.error: BaseException | None = None
        self._started = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Future[T] | None = None

    async def _tracked(self) -> T:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.ensure_future(self.coro)
        self._started.set()
        return await self._task

    def work(self) -> None:
        try:
            self.result.append(asyncio.run(self._tracked()))
        except BaseException as error:  # raised again in the caller's thread
            self.error = error
        finally:
            self._started.set()

    def cancel(self) -> None:
        self._started.wait()
        if self._loop is not None and self._task is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: the run has ended
                self._loop.call_soon_threadsafe(self._task.cancel)
