"""Namespaces that scale: with 10,000 namespaces in the store, 200 of them served by the
gateway, reading one namespace's playbook (``GET /v1/playbook``, and the served playbook a chat
request looks up after :meth:`Gateway.refresh`) runs as many store statements as with one
namespace; past the ``max_namespaces`` setting a new namespace is refused by name, and the
namespaces there keep working."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")

import aiohttp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from combee.serve import serve_settings
from combee.serve.running import GatewayThread, create_gateway
from combee.serve.served_playbooks import NamespaceRefused, ServedPlaybooks
from combee.serve.store import TraceStore

OPERATOR = "operator-token-1"
ANSWER = {
    "id": "c",
    "object": "chat.completion",
    "created": 1,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}


async def answer(request: Request) -> Response:
    await request.body()
    return JSONResponse(ANSWER)


UPSTREAM = Starlette(routes=[Route("/v1/chat/completions", answer, methods=["POST"])])


class CountedStatements:
    """Counts the statements run on the store's read connections (on any thread)."""

    def __init__(self, store: Any) -> None:
        self.count = 0
        self._lock = threading.Lock()
        reading = store.reading

        @contextlib.contextmanager
        def counted() -> Iterator[Any]:
            with reading() as db:
                yield _Counting(db, self)

        store.reading = counted

    def add(self) -> None:
        with self._lock:
            self.count += 1

    def during(self, action: Callable[[], Any]) -> int:
        before = self.count
        action()
        return self.count - before


class _Counting:
    def __init__(self, db: Any, counter: CountedStatements) -> None:
        self._db = db
        self._counter = counter

    def execute(self, *args: Any) -> Any:
        self._counter.add()
        return self._db.execute(*args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)


def name(number: int) -> str:
    return f"team-{number:05d}"


async def chat_in_every(url: str, namespaces: list[str]) -> list[int]:
    """One chat request in each namespace, 32 at a time; their statuses."""
    limit = asyncio.Semaphore(32)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    async with aiohttp.ClientSession() as session:

        async def one(namespace: str) -> int:
            async with (
                limit,
                session.post(
                    f"{url}/v1/chat/completions", json=body, headers={"X-Combee-Agent": namespace}
                ) as reply,
            ):
                await reply.read()
                return reply.status

        return await asyncio.gather(*(one(n) for n in namespaces))


def request(url: str, path: str, namespace: str) -> tuple[int, Any]:
    async def send() -> tuple[int, Any]:
        headers = {"X-Combee-Agent": namespace, "Authorization": f"Bearer {OPERATOR}"}
        async with aiohttp.ClientSession() as session:
            if path == "/v1/playbook":
                call = session.get(url + path, headers=headers)
            else:
                body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
                call = session.post(url + path, json=body, headers=headers)
            async with call as reply:
                return reply.status, await reply.json()

    return asyncio.run(send())


def first_versions(namespaces: int) -> Callable[[Any], None]:
    """A store write: version 1 of ``namespaces`` namespaces, as the gateway makes them."""

    def write(db: Any) -> None:
        for number in range(namespaces):
            db.execute(
                "INSERT INTO playbooks (namespace, version, text, created, status, parent,"
                " traces, provenance, check_result, note) VALUES"
                " (?, 1, '', 0, 'active', NULL, '[]', '{}', NULL, 'the starting playbook')",
                (name(number),),
            )

    return write


def served_store(
    tmp_path: Path, namespaces: int, served: int
) -> tuple[Any, GatewayThread, CountedStatements]:
    """A gateway whose store holds ``namespaces`` namespaces, ``served`` of them served once by a
    chat request (so the gateway has them in hand)."""
    upstream = GatewayThread(UPSTREAM)
    settings = serve_settings(store=str(tmp_path / "store"), learn_every=0, max_namespaces=10_000)
    gate, app = create_gateway(upstream.base_url, settings=settings, operator_token=OPERATOR)
    gate.store.write(first_versions(namespaces))
    running = GatewayThread(app)
    running.upstream = upstream  # type: ignore[attr-defined]
    names = [name(i) for i in range(served)]
    assert set(asyncio.run(chat_in_every(running.url, names))) == {200}
    return gate, running, CountedStatements(gate.store)


def reads_of_one_namespace(gate: Any, url: str, counted: CountedStatements) -> list[int]:
    """Statements run by GET /v1/playbook of one namespace, by a chat request after it, and by
    a chat request after :meth:`Gateway.refresh` (the store changed elsewhere), and by
    refresh itself."""
    return [
        counted.during(lambda: request(url, "/v1/playbook", name(0))),
        counted.during(lambda: request(url, "/v1/chat/completions", name(0))),
        counted.during(gate.refresh),
        counted.during(lambda: request(url, "/v1/chat/completions", name(0))),
    ]


def test_one_namespace_reads_the_same_with_10000_namespaces(tmp_path: Path) -> None:
    started = time.monotonic()
    gate, one, counted = served_store(tmp_path / "one", 1, 1)
    with one, one.upstream:  # type: ignore[attr-defined]
        alone = reads_of_one_namespace(gate, one.url, counted)
        status, shown = request(one.url, "/v1/playbook", name(0))
    assert status == 200 and shown["active"]["version"] == 1
    gate, many, counted = served_store(tmp_path / "many", 10_000, 200)
    with many, many.upstream:  # type: ignore[attr-defined]
        among_many = reads_of_one_namespace(gate, many.url, counted)
        assert gate.store.namespace_count() == 10_000
        refused = request(many.url, "/v1/chat/completions", "one-too-many")
        refused_read = request(many.url, "/v1/playbook", "one-too-many")
        kept = request(many.url, "/v1/chat/completions", name(9_999))
    assert among_many == alone
    assert alone[1] == alone[2] == 0  # kept between requests; a refresh reads nothing itself
    assert alone[3] == 1  # one indexed read of the one namespace
    for status, body in (refused, refused_read):
        assert status == 403
        assert "max_namespaces" in body["error"]["message"], body
    assert kept[0] == 200
    assert gate.store.namespace_count() == 10_000
    print(f"statements {alone}; built in {time.monotonic() - started:.0f} s")


def test_the_store_keeps_max_namespaces_for_gateways_that_share_it(tmp_path: Path) -> None:
    """Two gateways' playbook caches on one store, neither told of the other's namespaces: each
    counted the store before the other made its own, so by its count there is room; the store,
    which checks the bound in the write that makes a namespace, refuses the one too many."""
    with TraceStore(tmp_path / "store") as store:
        first, second = ServedPlaybooks(store, "", 5), ServedPlaybooks(store, "", 5)

        async def make() -> list[str]:
            await second.active("second-0")  # counts 0 namespaces, makes one
            for n in range(4):
                await first.active(f"first-{n}")  # counts 1, makes four: the store holds 5
            refused = []
            for name in ("second-1", "first-4"):
                try:
                    await (second if name.startswith("second") else first).active(name)
                except NamespaceRefused as error:
                    refused.append(str(error))
            return refused

        refused = asyncio.run(make())
        assert store.namespace_count() == 5
    assert len(refused) == 2 and all("max_namespaces" in message for message in refused)
