"""Without the sim extra (starlette and uvicorn), combee imports, connects and trains against an
endpoint; ``combee sim-server`` and ``combee bench`` name the extra to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.sim.extra import INSTALL_HINT

# ``None`` in sys.modules makes ``import starlette`` fail as if it were not installed (and
# importlib.util.find_spec report it missing): the subprocess sees a plain ``pip install combee``.
WITHOUT_SIM = """
import sys
for name in ("starlette", "uvicorn"):
    sys.modules[name] = None
"""


def run_without_sim(code: str, timeout: float = 180.0) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_SIM + code],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def combee_without_sim(*args: str) -> subprocess.CompletedProcess[str]:
    code = f"sys.argv = ['combee', *{list(args)!r}]\nfrom combee.cli.entry import main\nmain()\n"
    return run_without_sim(code)


def test_combee_imports_and_connects_without_the_sim_extra() -> None:
    result = run_without_sim(
        "import combee, combee.llm, combee.cli.main, combee.bench.suite, combee.sim\n"
        "llm = combee.llm.connect('sim', base_url='http://127.0.0.1:9/v1')\n"
        "assert llm.model == 'sim'\n"
        "print(combee.train.__name__, combee.sim.SimConfig.__name__)\n"
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["train", "SimConfig"]


def test_the_server_names_the_extra_when_imported_without_it() -> None:
    result = run_without_sim("from combee.sim import serve_in_thread\n")
    assert result.returncode == 1
    assert f"needs starlette and uvicorn, which the sim extra installs: {INSTALL_HINT}" in (
        result.stderr
    )


@pytest.mark.parametrize("command", [["sim-server"], ["bench", "--preset", "speed"]])
def test_a_command_that_runs_the_server_names_the_extra(command: list[str]) -> None:
    result = combee_without_sim(*command)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert INSTALL_HINT in result.stderr and "starlette and uvicorn" in result.stderr


def test_help_and_training_against_an_endpoint_need_no_extra(tmp_path: Path) -> None:
    assert combee_without_sim("--help").returncode == 0
    assert combee_without_sim("sim-server", "--help").returncode == 0
    with serve_in_thread(ace_responder) as server:
        result = combee_without_sim(
            "train", "--model", "sim", "--base-url", server.base_url, "--train-limit", "4",
            "--val-limit", "2", "--test-limit", "2", "--batch-size", "2",
            "--out", str(tmp_path / "run"),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "run" / "playbook.txt").exists()
