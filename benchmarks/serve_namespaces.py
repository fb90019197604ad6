"""The gateway with 1 and with 10,000 agent namespaces: ``GET /v1/playbook`` latency, and chat
latency under concurrent load with and without playbook reads running beside it.

The simulated server (its own process, ``--ttft`` seconds to first token) is the upstream;
``combee serve`` runs in its own process in front of it (learning off, operator routes open).
Each namespace is made the way agents make them: one chat request with its ``X-Combee-Agent``
name, ``--clients`` at a time. Then, for each count:

- ``GET /v1/playbook`` of one namespace, one call after another, on an idle gateway;
- ``--clients`` concurrent agents, each sending ``--requests`` chat requests in turn in
  namespaces drawn at random, alone, then with a reader calling ``GET /v1/playbook`` in a loop
  beside them (the reads' latency under that load is reported too).

    python benchmarks/serve_namespaces.py [--namespaces 1,10000] [--clients 100] [--requests 5]
        [--ttft 0.3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

import aiohttp
from serve_load import body, percentile, start_gateway

from combee.bench.server_process import SimServerProcess
from combee.sim import SimConfig


def name(number: int) -> str:
    return f"team-{number:05d}"


async def make_namespaces(url: str, count: int, clients: int) -> None:
    """One chat request in each of ``count`` namespaces, ``clients`` at a time."""
    limit = asyncio.Semaphore(clients)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def one(number: int) -> None:
            async with (
                limit,
                session.post(
                    url + "/chat/completions",
                    data=body(number, False),
                    headers={"Content-Type": "application/json", "X-Combee-Agent": name(number)},
                ) as reply,
            ):
                await reply.read()
                if reply.status != 200:
                    raise SystemExit(f"namespace {name(number)}: {reply.status}")

        await asyncio.gather(*(one(n) for n in range(count)))


async def playbook_reads(
    session: aiohttp.ClientSession, url: str, namespace: str, times: list[float], calls: int
) -> None:
    for _ in range(calls):
        started = time.perf_counter()
        async with session.get(url + "/playbook", headers={"X-Combee-Agent": namespace}) as reply:
            await reply.read()
            assert reply.status == 200, reply.status
        times.append(1000 * (time.perf_counter() - started))


async def chat_load(
    url: str, namespaces: int, clients: int, requests: int, reading: bool
) -> tuple[list[float], list[float], int]:
    """Chat latencies (ms) of ``clients`` agents, those of the playbook reads made beside them
    when ``reading``, and how many requests failed."""
    failed = 0
    chats: list[float] = []
    reads: list[float] = []
    done = asyncio.Event()
    pick = random.Random(7)
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def agent(c: int) -> None:
            nonlocal failed
            for r in range(requests):
                namespace = name(pick.randrange(namespaces))
                started = time.perf_counter()
                try:
                    async with session.post(
                        url + "/chat/completions",
                        data=body(c * requests + r, False),
                        headers={"Content-Type": "application/json", "X-Combee-Agent": namespace},
                    ) as reply:
                        await reply.read()
                        failed += reply.status != 200
                except aiohttp.ClientError:
                    failed += 1
                chats.append(1000 * (time.perf_counter() - started))

        async def reader() -> None:
            nonlocal failed
            while not done.is_set():
                try:
                    await playbook_reads(session, url, name(0), reads, 1)
                except aiohttp.ClientError:
                    failed += 1

        beside = asyncio.create_task(reader()) if reading else None
        await asyncio.gather(*(agent(c) for c in range(clients)))
        done.set()
        if beside is not None:
            await beside
    return chats, reads, failed


def shown(values: list[float]) -> str:
    return f"{percentile(values, 0.5):.1f} / {percentile(values, 0.99):.1f}"


async def measure(url: str, namespaces: int, args: argparse.Namespace) -> str:
    idle: list[float] = []
    async with aiohttp.ClientSession() as session:
        await playbook_reads(session, url, name(0), [], 5)  # warm
        await playbook_reads(session, url, name(0), idle, 100)
    await chat_load(url, namespaces, args.clients, 1, False)  # warm
    alone, _, failed = await chat_load(url, namespaces, args.clients, args.requests, False)
    beside, reads, failed_beside = await chat_load(
        url, namespaces, args.clients, args.requests, True
    )
    return (
        f"| {namespaces:,} | {shown(idle)} | {shown(alone)} | {shown(beside)} | "
        f"{shown(reads)} ({len(reads)} reads) | {failed} / {failed_beside} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespaces", default="1,10000")
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--requests", type=int, default=5, help="chat requests per agent")
    parser.add_argument("--ttft", type=float, default=0.3)
    args = parser.parse_args()
    rows = []
    with SimServerProcess(SimConfig(ttft_s=args.ttft)) as upstream:
        for count in [int(n) for n in args.namespaces.split(",")]:
            folder = Path(tempfile.mkdtemp(prefix="combee-serve-namespaces-"))
            gateway, url = start_gateway(
                upstream.base_url, folder / "store", "--open-operator-routes"
            )
            try:
                began = time.perf_counter()
                asyncio.run(make_namespaces(url, count, max(args.clients, 200)))
                made = time.perf_counter() - began
                print(f"{count:,} namespace(s) made in {made:.0f} s", flush=True)
                rows.append(asyncio.run(measure(url, count, args)))
            finally:
                gateway.terminate()
                gateway.wait(timeout=60)
                shutil.rmtree(folder, ignore_errors=True)
    print(f"load average: {os.getloadavg()[0]:.2f}; cores: {os.cpu_count()}")
    print(
        f"| namespaces | GET /v1/playbook p50 / p99 ms, idle | chat p50 / p99 ms, "
        f"{args.clients} agents | chat p50 / p99 ms, with playbook reads beside | "
        "GET /v1/playbook p50 / p99 ms, under that load | requests failed, alone / beside |"
    )
    print("|---:|---|---|---|---|---:|")
    for row in rows:
        print(row)


if __name__ == "__main__":
    main()
