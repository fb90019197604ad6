"""The gateway under load: throughput, added latency, CPU per request, nothing lost.

The simulated server (its own process, ``--ttft`` seconds to first token) is the upstream;
``combee serve`` runs in its own process in front of it (recording every exchange, learning
off); ``C`` concurrent clients (one aiohttp session here, each client sending ``--requests``
calls one after another) talk to the gateway, then to the upstream directly with the same
requests for the baseline. Plain and streamed replies, and two arrival patterns: ``burst`` (all
clients start at the same instant, and since every reply takes the same time they stay in step:
each round is ``C`` requests arriving within a millisecond, the worst case for queueing) and
``steady`` (client ``c`` starts ``c/C`` of a reply's time late, so ``C`` requests are in flight
at every moment and they arrive evenly, as independent agents' requests do).

Added latency, plain: each reply's latency at the client minus the upstream's share the gateway
reports in its ``Server-Timing`` header. Streamed: the time to the first byte and to the end,
through the gateway minus directly (percentile against percentile). CPU per request: the gateway
process's CPU time (``/proc``) over the requests it served. Lost: requests without a 200, and
answered requests missing from the store.

    python benchmarks/serve_load.py [--clients 100,400] [--requests 3] [--ttft 0.3]
        [--arrivals burst,steady]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from combee.bench.server_process import SimServerProcess, free_port
from combee.sim import SimConfig

_TIMING = re.compile(r"upstream;dur=([0-9.]+)")


@dataclass
class Sample:
    total: float
    first_byte: float
    upstream_ms: float | None
    ok: bool


@dataclass
class Wave:
    samples: list[Sample] = field(default_factory=list)
    seconds: float = 0.0
    loadgen_cpu: float = 0.0

    def ok(self) -> list[Sample]:
        return [s for s in self.samples if s.ok]


def body(n: int, stream: bool) -> bytes:
    question = f"Request {n}: what does the invoice {n:05d} total, tax included? " * 8
    request = {
        "model": "sim",
        "messages": [
            {"role": "system", "content": "You are a billing assistant. Answer briefly."},
            {"role": "user", "content": question},
        ],
        "max_tokens": 64,
    }
    if stream:
        request["stream"] = True
    return json.dumps(request).encode()


async def wave(url: str, clients: int, requests: int, stream: bool, spread: float = 0.0) -> Wave:
    result = Wave()
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def client(c: int) -> None:
            await asyncio.sleep(spread * c / clients)
            for r in range(requests):
                payload = body(c * requests + r, stream)
                started = time.perf_counter()
                first = None
                try:
                    async with session.post(
                        url + "/chat/completions",
                        data=payload,
                        headers={"Content-Type": "application/json"},
                    ) as reply:
                        async for _ in reply.content.iter_any():
                            if first is None:
                                first = time.perf_counter()
                        ended = time.perf_counter()
                        timing = _TIMING.search(reply.headers.get("server-timing", ""))
                        result.samples.append(
                            Sample(
                                total=ended - started,
                                first_byte=(first or ended) - started,
                                upstream_ms=float(timing[1]) if timing else None,
                                ok=reply.status == 200,
                            )
                        )
                except (aiohttp.ClientError, TimeoutError):
                    result.samples.append(Sample(0.0, 0.0, None, False))

        cpu = time.process_time()
        began = time.perf_counter()
        await asyncio.gather(*(client(c) for c in range(clients)))
        result.seconds = time.perf_counter() - began
        result.loadgen_cpu = time.process_time() - cpu
    return result


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_of(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_gateway(upstream: str, store: Path, *flags: str) -> tuple[subprocess.Popen[bytes], str]:
    """``combee serve`` in front of ``upstream``, with ``flags`` besides; its process and URL."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "combee.cli.main", "serve", "--upstream", upstream,
            "--model", "sim", "--store", str(store), "--port", str(port), "--no-learn", *flags,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2):
                return process, url + "/v1"
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the gateway did not start") from None
            time.sleep(0.1)


def stored(store: Path) -> int:
    with sqlite3.connect(store / "traces.sqlite") as db:
        return int(db.execute("SELECT COUNT(*) FROM exchanges WHERE status = 200").fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="100,400")
    parser.add_argument("--requests", type=int, default=3, help="calls per client, in turn")
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--arrivals", default="burst,steady", help="burst, steady or both")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="combee-serve-load-"))
    rows = []
    with SimServerProcess(SimConfig(ttft_s=args.ttft)) as upstream:
        gateway, url = start_gateway(upstream.base_url, folder / "store")
        try:
            asyncio.run(wave(url, 20, 1, False))  # connections and imports warm
            asyncio.run(wave(upstream.base_url, 20, 1, False))
            for clients in [int(c) for c in args.clients.split(",")]:
                for arrivals in args.arrivals.split(","):
                    spread = {"burst": 0.0, "steady": args.ttft}[arrivals.strip()]
                    for stream in (False, True):
                        before_cpu, before_rows = cpu_of(gateway.pid), stored(folder / "store")
                        through = asyncio.run(wave(url, clients, args.requests, stream, spread))
                        gateway_cpu = cpu_of(gateway.pid) - before_cpu
                        kept = stored(folder / "store") - before_rows
                        direct = asyncio.run(
                            wave(upstream.base_url, clients, args.requests, stream, spread)
                        )
                        rows.append(
                            report(arrivals, clients, stream, through, direct, gateway_cpu, kept)
                        )
        finally:
            gateway.terminate()
            gateway.wait(timeout=60)
    shutil.rmtree(folder, ignore_errors=True)
    print(f"load average: {os.getloadavg()[0]:.2f}; cores: {os.cpu_count()}")
    print(
        "| arrivals | clients | reply | requests | through/s "
        "| latency p50 / p99 via gateway (direct) ms | added p50 / p99 ms "
        "| gateway CPU ms/req | loadgen CPU ms/req | lost |"
    )
    print("|---|---:|---|---:|---:|---|---|---:|---:|---:|")
    for row in rows:
        print(row)


def report(
    arrivals: str,
    clients: int,
    stream: bool,
    through: Wave,
    direct: Wave,
    gateway_cpu: float,
    kept: int,
) -> str:
    ok, base = through.ok(), direct.ok()
    total = [s.total * 1000 for s in ok]
    base_total = [s.total * 1000 for s in base]
    if stream:
        first = [s.first_byte * 1000 for s in ok]
        base_first = [s.first_byte * 1000 for s in base]
        added = (
            f"first byte {percentile(first, 0.5) - percentile(base_first, 0.5):.1f} / "
            f"{percentile(first, 0.99) - percentile(base_first, 0.99):.1f}; end "
            f"{percentile(total, 0.5) - percentile(base_total, 0.5):.1f} / "
            f"{percentile(total, 0.99) - percentile(base_total, 0.99):.1f}"
        )
    else:
        own = [s.total * 1000 - s.upstream_ms for s in ok if s.upstream_ms is not None]
        added = f"{percentile(own, 0.5):.1f} / {percentile(own, 0.99):.1f}"
    sent = len(through.samples)
    lost = (sent - len(ok)) + (len(ok) - kept)
    return (
        f"| {arrivals.strip()} | {clients} | {'stream' if stream else 'plain'} | {sent} | "
        f"{len(ok) / through.seconds:.0f} | {percentile(total, 0.5):.0f} / "
        f"{percentile(total, 0.99):.0f} ({percentile(base_total, 0.5):.0f} / "
        f"{percentile(base_total, 0.99):.0f}) | {added} | "
        f"{1000 * gateway_cpu / max(1, len(ok)):.2f} | "
        f"{1000 * through.loadgen_cpu / max(1, sent):.2f} | {lost} |"
    )


if __name__ == "__main__":
    main()
