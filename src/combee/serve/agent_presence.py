"""Waiting on the upstream only while the agent is still there.

A server does not stop a handler when its client goes away: it only says so, by an
``http.disconnect`` message on the request's receive channel once the body has been read. A call
to the upstream made for an agent that has left is cancelled (and its connection closed), rather
than left to run to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request

T = TypeVar("T")


class AgentGone(Exception):
    """The agent closed its connection before its reply was ready."""


async def while_agent_waits(request: Request, work: Awaitable[T]) -> T:
    """``work``'s result; :class:`AgentGone` (``work`` cancelled) when the agent leaves first.
    The request's body must have been read."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_left(request))
    try:
        await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        gone.cancel()
    if task.cancelled():
        raise AgentGone()
    return task.result()


async def _left(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
