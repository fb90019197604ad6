"""The gateway as a fleet, side by side: the upstream directly, one gateway on SQLite, two
replicas on one PostgreSQL, and LiteLLM's proxy, all in front of the same upstream.

The simulated server (its own process, ``--ttft`` seconds to first token) is the upstream. In
front of it, each in its own processes and all running for the whole run: ``combee serve`` on
its default SQLite store; two ``combee serve`` replicas sharing one PostgreSQL database (a
PostgreSQL server started here, in a temporary folder on loopback); LiteLLM's proxy (``--litellm
PATH``, its executable, installed apart: ``pip install 'litellm[proxy]'``), model ``sim`` mapped
to the upstream as an OpenAI-compatible server, logging off. For each client count and arrival
pattern, the same plain requests go directly, then through each in turn; the fleet's clients are
split between the replicas, client ``c`` to replica ``c % 2``, their starts interleaved. Waves,
arrival patterns and requests are those of ``serve_load.py``.

Added latency against direct: percentile minus the direct wave's percentile (every route), and
for Combee each reply's latency minus the upstream's share in its ``Server-Timing`` header.
CPU per request: the route's processes and their children (``/proc``), PostgreSQL's apart.
Lost: requests without a 200, plus answered requests missing from the store (rows counted in
SQLite or PostgreSQL).

    python benchmarks/serve_fleet.py [--clients 100,400] [--requests 3] [--ttft 0.3]
        [--arrivals steady,burst] [--litellm PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.serve.postgres_server

from serve_load import Wave, percentile, start_gateway, stored, wave
from tests.serve.postgres_server import PostgresServer

from combee.bench.server_process import SimServerProcess, free_port
from combee.sim import SimConfig

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Route:
    """One way to the upstream: where clients send, whose CPU counts, what the store holds."""

    name: str
    urls: list[str]
    pids: list[int]
    database_pid: int | None = None
    stored: Callable[[], int] | None = None


@dataclass
class Measured:
    route: Route
    through: Wave
    cpu: float
    database_cpu: float
    kept: int | None


def tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid``, of its children it has reaped, and of its living descendants."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        children: list[int] = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as handle:
                children += [int(child) for child in handle.read().split()]
    except OSError:  # gone meanwhile
        return 0.0
    own = sum(int(ticks) for ticks in fields[11:15]) / _TICK  # utime stime cutime cstime
    return own + sum(tree_cpu(child) for child in children)


async def split_wave(urls: list[str], clients: int, requests: int, spread: float) -> Wave:
    """``serve_load.wave`` with its clients split between ``urls``: client ``c`` sends to
    ``urls[c % n]`` and starts ``c / clients`` of ``spread`` late, as in one wave."""
    n = len(urls)

    async def share(i: int) -> Wave:
        count = len(range(i, clients, n))
        await asyncio.sleep(spread * i / clients)
        return await wave(urls[i], count, requests, False, spread * n * count / clients)

    began, cpu = time.perf_counter(), time.process_time()
    shares = await asyncio.gather(*(share(i) for i in range(n)))
    return Wave(
        samples=[sample for part in shares for sample in part.samples],
        seconds=time.perf_counter() - began,
        loadgen_cpu=time.process_time() - cpu,
    )


def measure(route: Route, clients: int, requests: int, spread: float) -> Measured:
    cpu = sum(tree_cpu(pid) for pid in route.pids)
    database_cpu = tree_cpu(route.database_pid) if route.database_pid else 0.0
    rows = route.stored() if route.stored else 0
    through = asyncio.run(split_wave(route.urls, clients, requests, spread))
    return Measured(
        route,
        through,
        cpu=sum(tree_cpu(pid) for pid in route.pids) - cpu,
        database_cpu=(tree_cpu(route.database_pid) - database_cpu) if route.database_pid else 0.0,
        kept=route.stored() - rows if route.stored else None,
    )


def answered_in_postgres(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as db:
        row = db.execute("SELECT COUNT(*) FROM exchanges WHERE status = 200").fetchone()
        return int(row[0]) if row else 0


def wait_until_up(process: subprocess.Popen[bytes], url: str, what: str, log: Path) -> None:
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise SystemExit(f"{what} did not start:\n{tail}") from None
            time.sleep(0.2)


def start_litellm(
    executable: str, upstream: str, folder: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """LiteLLM's proxy, model ``sim`` routed to ``upstream``; its process and URL."""
    config = {  # JSON is YAML
        "model_list": [
            {
                "model_name": "sim",
                "litellm_params": {"model": "openai/sim", "api_base": upstream, "api_key": "none"},
            }
        ],
        "litellm_settings": {
            "set_verbose": False,
            "json_logs": False,
            "turn_off_message_logging": True,
            "callbacks": [],
            "success_callback": [],
            "failure_callback": [],
            "request_timeout": 300,
        },
        "general_settings": {
            "disable_spend_logs": True,
            "disable_error_logs": True,
            # No key, as the gateways here run without tokens: the same work per request.
            "dangerously_permit_weak_or_unset_master_key": True,
        },
    }
    (folder / "litellm.yaml").write_text(json.dumps(config, indent=2))
    port = free_port()
    log = folder / "litellm.log"
    environment = {
        **os.environ,
        "LITELLM_LOG": "ERROR",  # also uvicorn's level: no access log
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no download at start
    }
    environment.pop("DATABASE_URL", None)
    with log.open("wb") as output:
        process = subprocess.Popen(
            [
                executable, "--config", str(folder / "litellm.yaml"),
                "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1",
            ],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=environment,
            cwd=folder,
        )  # fmt: skip
    wait_until_up(process, f"http://127.0.0.1:{port}/health/liveliness", "LiteLLM's proxy", log)
    return process, f"http://127.0.0.1:{port}/v1"


@contextmanager
def running(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    try:
        yield process
    finally:
        process.terminate()
        process.wait(timeout=60)


@contextmanager
def postgres_server(folder: Path) -> Iterator[PostgresServer]:
    server = PostgresServer(folder)  # trust authentication on loopback
    try:
        yield server
    finally:
        server.stop()


def routes(
    stack: ExitStack, upstream: str, folder: Path, litellm: str | None
) -> tuple[list[Route], list[str]]:
    """Every way to ``upstream`` started (closed with ``stack``), and notes on those skipped."""
    found = [Route("direct", [upstream], [])]
    notes: list[str] = []
    gateway, url = start_gateway(upstream, folder / "store")
    stack.enter_context(running(gateway))
    found.append(
        Route("combee, SQLite", [url], [gateway.pid], None, lambda: stored(folder / "store"))
    )
    if shutil.which("initdb") and shutil.which("pg_ctl"):
        database_folder = Path(tempfile.mkdtemp(prefix="combee-fleet-pg-"))
        stack.callback(shutil.rmtree, database_folder, ignore_errors=True)
        database = stack.enter_context(postgres_server(database_folder))
        postmaster = int((database.data / "postmaster.pid").read_text().split()[0])
        replicas = []
        for _ in range(2):
            # start_gateway passes the store on as str(store): a URL goes through unchanged.
            replica, url = start_gateway(upstream, cast(Path, database.url))
            stack.enter_context(running(replica))
            replicas.append((replica, url))
        found.append(
            Route(
                "combee ×2, PostgreSQL",
                [url for _, url in replicas],
                [replica.pid for replica, _ in replicas],
                postmaster,
                lambda: answered_in_postgres(database.url),
            )
        )
    else:
        notes.append("combee ×2, PostgreSQL: not run, PostgreSQL's initdb and pg_ctl not on PATH")
    if litellm:
        proxy, url = start_litellm(litellm, upstream, folder)
        stack.enter_context(running(proxy))
        found.append(Route("LiteLLM proxy", [url], [proxy.pid]))
    else:
        notes.append("LiteLLM proxy: not run, no --litellm PATH (pip install 'litellm[proxy]')")
    return found, notes


def row(arrivals: str, clients: int, measured: Measured, direct: Wave) -> str:
    through = measured.through
    ok, base = through.ok(), [s.total * 1000 for s in direct.ok()]
    total = [s.total * 1000 for s in ok]
    p50, p99 = percentile(total, 0.5), percentile(total, 0.99)
    is_direct = not measured.route.pids
    added = (
        "—"
        if is_direct
        else f"{p50 - percentile(base, 0.5):.1f} / {p99 - percentile(base, 0.99):.1f}"
    )
    own_ms = [s.total * 1000 - s.upstream_ms for s in ok if s.upstream_ms is not None]
    own = f"{percentile(own_ms, 0.5):.1f} / {percentile(own_ms, 0.99):.1f}" if own_ms else "—"
    answered = max(1, len(ok))
    cpu = "—" if is_direct else f"{1000 * measured.cpu / answered:.2f}"
    database = (
        f"{1000 * measured.database_cpu / answered:.2f}" if measured.route.database_pid else "—"
    )
    sent = len(through.samples)
    lost = str(sent - len(ok))
    if measured.kept is not None:
        lost += f" + {len(ok) - measured.kept}"
    return (
        f"| {arrivals} | {clients} | {measured.route.name} | {sent} | "
        f"{len(ok) / through.seconds:.0f} | {p50:.0f} / {p99:.0f} | {added} | {own} | {cpu} | "
        f"{database} | {lost} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="100,400")
    parser.add_argument("--requests", type=int, default=3, help="calls per client, in turn")
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--arrivals", default="steady,burst", help="steady, burst or both")
    parser.add_argument("--litellm", help="the litellm executable (with its proxy extras)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    folder = Path(tempfile.mkdtemp(prefix="combee-serve-fleet-"))
    rows: list[str] = []
    with ExitStack() as stack:
        stack.callback(shutil.rmtree, folder, ignore_errors=True)
        upstream = stack.enter_context(SimServerProcess(SimConfig(ttft_s=args.ttft)))
        found, notes = routes(stack, upstream.base_url, folder, args.litellm)
        for route in found:  # connections and imports warm
            asyncio.run(split_wave(route.urls, 40, 2, 0.0))
        for clients in [int(c) for c in args.clients.split(",")]:
            for arrivals in [a.strip() for a in args.arrivals.split(",")]:
                spread = {"burst": 0.0, "steady": args.ttft}[arrivals]
                direct = measure(found[0], clients, args.requests, spread)
                rows.append(row(arrivals, clients, direct, direct.through))
                for route in found[1:]:
                    measured = measure(route, clients, args.requests, spread)
                    rows.append(row(arrivals, clients, measured, direct.through))
    print(
        f"load average before: {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}; "
        f"cores: {os.cpu_count()} (load generator, upstream, gateways and PostgreSQL share them)"
    )
    print(
        "| arrivals | clients | route | requests | answered/s | latency p50 / p99 ms "
        "| added vs direct p50 / p99 ms | own time p50 / p99 ms (Server-Timing) "
        "| gateway CPU ms/req | PostgreSQL CPU ms/req | lost: non-200 + not stored |"
    )
    print("|---|---:|---|---:|---:|---|---|---|---:|---:|---:|")
    for line in rows:
        print(line)
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
