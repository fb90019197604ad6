"""``combee demo``: the short real training, against the scripted server, and its summary."""

from __future__ import annotations

from pathlib import Path

from combee.engine.demo import summary
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from tests.cli_helpers import run_combee


def _results(bullets: int) -> dict[str, object]:
    return {
        "llm_calls": {"preflight": 1, "generator": 12, "curator": 2},
        "test_samples": 4,
        "baseline_test_accuracy": 0.25,
        "test_accuracy": 0.75,
        "train_seconds": 198.4,
        "test_seconds": 46.7,
        "playbook_bullets": bullets,
        "playbook_tokens": 54,
    }


def test_the_summary_leaves_out_the_preflight_and_says_1_bullet() -> None:
    one = summary(_results(1), wall_s=297.0, playbook="## Formulas\n[fml-00001] x\n")
    assert "  without a playbook:        0.250" in one
    assert "wall time: 4m57s in all (training 3m18s, final test 47s)" in one
    assert "LLM calls: generator 12, curator 2" in one
    assert "learned playbook (1 bullet, ~54 tokens):" in one
    assert one[-1] == "## Formulas\n[fml-00001] x"
    assert "learned playbook (3 bullets, ~54 tokens):" in summary(
        _results(3), wall_s=1.0, playbook=""
    )


def test_the_demo_runs_against_an_endpoint_and_prints_its_playbook(tmp_path: Path) -> None:
    with serve_in_thread(ace_responder) as server:
        result = run_combee(
            "demo", "--model", "sim", "--base-url", server.base_url, "--out", str(tmp_path / "d")
        )
    assert result.returncode == 0, result.stderr
    assert "accuracy on 4 Formula test questions:" in result.stdout
    # One batch of 4 (too small for the gate to hold a sample out of): 4 generate and 4
    # reflect calls, then the curator calls over the copies; the 4 test questions answered
    # before and after.
    assert "LLM calls: generator 12, reflector 4, curator " in result.stdout
    playbook = (tmp_path / "d" / "playbook.txt").read_text()
    bullets = sum(line.startswith("[") for line in playbook.splitlines())
    assert bullets > 0
    assert f"learned playbook ({bullets} bullets, " in result.stdout
    assert playbook.strip() in result.stdout
