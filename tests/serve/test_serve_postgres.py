"""Gateway replicas on one PostgreSQL store, over real HTTP: each replica is ``combee serve`` in a
process of its own, the upstream and the learner are the scripted server, the database is a
PostgreSQL server the test starts in a temporary folder.

Two replicas behind a client that alternates between them take 100 concurrent agents, and one is
killed with ``kill -9`` mid-burst: every exchange that got an answer is stored exactly once. A
learning round runs on one replica at a time (the other is refused while it runs, and finds
nothing left to learn after it), and the version it activates, or a rollback made on the other
replica, is served by both. A stopped database costs requests, not the gateway."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("psycopg")

import openai
import psycopg
from typer.testing import CliRunner

from combee.cli.main import app
from combee.serve import TraceStore
from combee.serve.records import Feedback, PlaybookVersion
from combee.serve.store_writes import activate_version, add_version, ensure_first, record_feedback
from combee.sim import SimConfig, serve_in_thread
from tests.serve.gateway_process import GatewayProcess
from tests.serve.postgres_server import PostgresServer
from tests.tasks.test_tool_agent import weather_model

OPERATOR = "operator-token-of-the-replicas"


def start_replica(upstream: str, store: str, rounds: Path) -> GatewayProcess:
    """A replica: ``combee serve`` on the shared store, its rounds' folder its own."""
    return GatewayProcess(upstream, store, "--rounds-folder", str(rounds), operator=OPERATOR)


def call(url: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url,
        data=data,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {OPERATOR}"},
        method="GET" if body is None else "POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())


async def ask(base_url: str, marker: str) -> tuple[str | None, str | None]:
    """One request: its trace id and the playbook version served (None, None: no answer)."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0, timeout=120)
    try:
        raw = await client.chat.completions.with_raw_response.create(
            model="sim", messages=[{"role": "user", "content": f"request {marker}"}]
        )
        return raw.headers.get("x-combee-trace"), raw.headers.get("x-combee-playbook-version")
    except openai.APIError:
        return None, None
    finally:
        await client.close()


def stored_markers(url: str) -> list[str]:
    with psycopg.connect(url) as db:
        rows = db.execute("SELECT messages FROM exchanges").fetchall()
    return [json.loads(row[0])[0]["content"].split()[-1] for row in rows]


def served_version(replica: GatewayProcess, marker: str) -> str | None:
    return asyncio.run(ask(replica.url + "/v1", marker))[1]


def wait_for_version(replica: GatewayProcess, version: str) -> float:
    """Seconds until ``replica`` serves ``version`` (asked every 50 ms)."""
    started = time.monotonic()
    while served_version(replica, f"v{time.monotonic_ns()}") != version:
        assert time.monotonic() - started < 30, f"{replica.url} never served v{version}"
        time.sleep(0.05)
    return time.monotonic() - started


def test_two_replicas_share_one_store_one_round_and_every_version(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    # Half of the burst's requests hang at the upstream for a while (drawn per request, seeded),
    # so the kill finds requests in flight on the killed replica whatever the machine's speed.
    config = SimConfig(ttft_s=0.05, rate_hang=0.5, hang_s=10.0)
    with serve_in_thread(weather_model) as upstream:
        replicas = [
            start_replica(upstream.base_url, postgres.url, tmp_path / "rounds") for _ in "ab"
        ]
        a, b = replicas
        try:
            upstream.reset(config=config)
            answered: dict[str, str] = {}

            async def burst() -> None:
                async def one(n: int) -> None:
                    trace, _ = await ask(replicas[n % 2].url + "/v1", f"b{n}")
                    if trace is not None:
                        answered[f"b{n}"] = trace

                tasks = [asyncio.create_task(one(n)) for n in range(100)]
                seen, quiet_since = -1, time.monotonic()
                while time.monotonic() - quiet_since < 2.0:  # the quick half is answered
                    await asyncio.sleep(0.1)
                    if len(answered) != seen:
                        seen, quiet_since = len(answered), time.monotonic()
                a.kill()
                await asyncio.gather(*tasks)

            asyncio.run(burst())
            on_a = [m for m in answered if int(m[1:]) % 2 == 0]
            on_b = [m for m in answered if int(m[1:]) % 2 == 1]
            assert on_a and len(on_b) == 50  # b answered all its half, the hanging ones late
            markers = stored_markers(postgres.url)
            for marker in answered:
                assert markers.count(marker) == 1, marker
            assert len(markers) == len(answered)  # nothing unanswered, nothing twice

            upstream.reset(config=SimConfig())
            a = replicas[0] = start_replica(upstream.base_url, postgres.url, tmp_path / "rounds")
            for n, trace in enumerate(list(answered.values())[:10]):
                status, _ = call(
                    replicas[n % 2].url + "/v1/feedback", {"trace_id": trace, "success": True}
                )
                assert status == 200

            # One round at a time across the replicas: while one holds the namespace's round,
            # the other is refused.
            with psycopg.connect(postgres.url, autocommit=True) as holder:
                holder.execute("SELECT pg_advisory_lock(hashtext('combee round default'))")
                status, refused = call(a.url + "/v1/learn", {})
                assert status == 409 and "running elsewhere" in refused["error"]["message"]
            status, learned = call(b.url + "/v1/learn", {})
            assert status == 200 and learned["version"] == 2 and learned["traces"] == 10, learned
            status, again = call(a.url + "/v1/learn", {})
            assert status == 200 and again["version"] is None  # nothing left to learn

            # The version activated on b is served by a, and a rollback on a is served by b.
            waited = [wait_for_version(a, "2")]
            status, _ = call(a.url + "/v1/playbook/rollback", {})
            assert status == 200
            waited.append(wait_for_version(b, "1"))
            print(f"a version reached the other replica in {max(waited):.2f} s")
        finally:
            for replica in replicas:
                replica.stop()


def test_a_stopped_database_answers_503_and_the_gateway_serves_again_once_it_is_back(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    with serve_in_thread(weather_model) as upstream:
        replica = start_replica(upstream.base_url, postgres.url, tmp_path / "rounds")
        try:
            assert asyncio.run(ask(replica.url + "/v1", "before"))[0] is not None
            postgres.stop()
            sent = len(upstream.records)
            refused = []
            for n in range(2):
                client = openai.OpenAI(base_url=replica.url + "/v1", api_key="k", max_retries=0)
                with pytest.raises(openai.APIStatusError) as caught:
                    client.chat.completions.create(
                        model="sim", messages=[{"role": "user", "content": f"request down{n}"}]
                    )
                client.close()
                refused.append(caught.value)
            assert [r.status_code for r in refused] == [503, 503]
            for r in refused:  # found on a read, a write, or the probe of a store known down
                assert "store" in r.message and "postgresql://" in r.message, r.message
                assert "retry" in r.message
            assert len(upstream.records) <= sent + 1  # at most the one that found it down
            status, why = call(replica.url + "/readyz")
            assert status == 503 and why["ready"] is False
            postgres.start()
            trace = None
            for n in range(20):  # the writer reconnects on the first write after the restart
                trace = asyncio.run(ask(replica.url + "/v1", f"after{n}"))[0]
                if trace is not None:
                    break
                time.sleep(0.5)
            assert trace is not None
            assert call(replica.url + "/readyz")[0] == 200
        finally:
            replica.stop()
    markers = stored_markers(postgres.url)
    assert markers.count("before") == 1 and not {"down0", "down1"} & set(markers)


def test_the_store_keeps_its_promises_on_postgresql(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    with TraceStore(postgres.url, folder=tmp_path) as store:
        assert "password" not in store.name
        store.write(ensure_first("ns", "start"))
        store.write(ensure_first("ns", "ignored"))  # version 1 exists: kept
        assert store.active("ns") is not None and store.active("ns").text == "start"  # type: ignore[union-attr]
        seqs = [
            store.write(record_feedback(Feedback(trace_id=f"t{n}", namespace="ns", success=True)))
            for n in range(3)
        ]
        assert seqs == sorted(seqs) and len(set(seqs)) == 3
        assert [f.trace_id for _, f in store.feedback_after("ns", seqs[0])] == ["t1", "t2"]
        assert store.traces_with_new_feedback() == {"ns": 3}
        version = PlaybookVersion(
            namespace="ns", version=0, text="learned", created=0.0, status="candidate", parent=1
        )
        number = store.write(add_version(version, activate=True, watermark=seqs[-1]))
        assert number == 2 and store.watermark("ns") == seqs[-1]
        assert store.traces_with_new_feedback() == {}
        assert [v.status for v in store.versions("ns")] == ["retired", "active"]
        store.write(activate_version("ns", 1))
        assert [v.status for v in store.versions("ns")] == ["active", "retired"]
        with pytest.raises(Exception, match="no playbook version 9"):
            store.write(activate_version("ns", 9))
        # One active version per namespace, whatever a writer does.
        with pytest.raises(psycopg.errors.UniqueViolation):
            store.write(
                lambda db: db.execute(
                    "UPDATE playbooks SET status = 'active' WHERE namespace = 'ns'"
                )
            )
        with (
            store.round_lock("ns") as held,
            TraceStore(postgres.url, folder=tmp_path) as other,
            other.round_lock("ns") as elsewhere,
            other.round_lock("other") as free,
        ):
            assert held and not elsewhere and free


@pytest.mark.parametrize("command", ["playbook", "export", "rollback", "learn"])
def test_a_store_that_cannot_be_reached_is_one_line_without_its_password(command: str) -> None:
    unreachable = "postgresql://bob:hunter2@127.0.0.1:1/fleet"
    model = ["--model", "sim"] if command == "learn" else []
    result = CliRunner().invoke(app, ["serve", command, "--store", unreachable, *model])
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the PostgreSQL store" in lines[0]
    assert "--store" in lines[0] and "hunter2" not in result.output


def test_two_replicas_keep_max_namespaces_between_them(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """Both replicas allow 5 namespaces and take 12 new agent names each, all at once: the store
    holds 5 namespaces, not 5 per replica; every refused agent hears why."""
    most, names = 5, 12

    async def burst(replicas: list[GatewayProcess]) -> list[tuple[str, int, str]]:
        async def one(replica: GatewayProcess, name: str) -> tuple[str, int, str]:
            client = openai.AsyncOpenAI(
                base_url=replica.url + "/v1", api_key="k", max_retries=0, timeout=120,
                default_headers={"X-Combee-Agent": name},
            )  # fmt: skip
            try:
                await client.chat.completions.create(
                    model="sim", messages=[{"role": "user", "content": f"request {name}"}]
                )
                return name, 200, ""
            except openai.APIStatusError as refused:
                return name, refused.status_code, refused.message
            finally:
                await client.close()

        return await asyncio.gather(
            *(one(r, f"{r.url[-5:]}-agent-{n}") for n in range(names) for r in replicas)
        )

    with serve_in_thread(weather_model) as upstream:
        flags = ("--rounds-folder", str(tmp_path / "rounds"), "--max-namespaces", str(most))
        replicas = [
            GatewayProcess(upstream.base_url, postgres.url, *flags, operator=OPERATOR) for _ in "ab"
        ]
        try:
            answers = asyncio.run(burst(replicas))
        finally:
            for replica in replicas:
                replica.stop()
    with psycopg.connect(postgres.url) as db:
        stored = {row[0] for row in db.execute("SELECT DISTINCT namespace FROM playbooks")}
    served = {name for name, status, _ in answers if status == 200}
    refused = [(status, message) for _, status, message in answers if status != 200]
    assert len(stored) == most and served <= stored
    assert len(served) + len(refused) == 2 * names
    assert refused and all(s == 403 and "max_namespaces" in m for s, m in refused), refused
