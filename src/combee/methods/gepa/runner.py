"""Run coroutines on one event loop from synchronous code.

gepa's engine is synchronous; our LLM client is async and bound to the loop it first runs on.
A :class:`LoopRunner` hands whole waves of calls to that loop (``run_coroutine_threadsafe``) and
waits once per wave, so the calls of a wave run concurrently while gepa's thread blocks.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Coroutine, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


class LoopRunner:
    """Submits work to ``loop`` (an already running loop on another thread), or, when None, to a
    loop this runner starts on its own daemon thread and stops in :meth:`close`."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._thread: threading.Thread | None = None
        if loop is None:
            loop = asyncio.new_event_loop()
            started = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(started.set)
                loop.run_forever()

            self._thread = threading.Thread(target=serve, name="combee-gepa-loop", daemon=True)
            self._thread.start()
            started.wait()
        self.loop = loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its result (never call from the loop itself)."""
        if _running_loop() is self.loop:
            coro.close()
            raise RuntimeError(
                "LoopRunner.run was called on its own event loop; run the synchronous caller "
                "in a worker thread (asyncio.to_thread)"
            )
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def gather(self, calls: Sequence[Awaitable[T]]) -> list[T | BaseException]:
        """Run ``calls`` concurrently as one wave; each slot holds a result or its exception."""
        if not calls:
            return []
        return self.run(_gather(calls))

    def close(self) -> None:
        """Stop the loop this runner started (a loop passed in is left alone)."""
        if self._thread is None:
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10.0)
        self.loop.close()
        self._thread = None

    def __enter__(self) -> LoopRunner:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


async def _gather(calls: Sequence[Awaitable[T]]) -> list[T | BaseException]:
    return list(await asyncio.gather(*calls, return_exceptions=True))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
