"""Ctrl-C while the command line is still loading ends quietly (exit 130), never a traceback.

Before the first line of ``combee`` runs, the interpreter starts and reads our entry module:
that window is Python's own, and no program can catch a signal in it. Neither ``combee`` nor
its entry module imports anything, so the first compiled extension of an installed package
that the process maps is loaded by the command line itself, inside the entry point's guard.
The test waits for that moment (read from ``/proc``, not guessed from timings, which a busy
machine upsets) and sends the signal then, or a little later."""

from __future__ import annotations

import os
import signal
import subprocess
import sysconfig
import time
from pathlib import Path

import pytest

from tests.cli_helpers import COMBEE

SITE_PACKAGES = str(Path(sysconfig.get_paths()["purelib"]).resolve())

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")


def _loads_installed_extension(pid: int) -> bool:
    """Whether the process has mapped a compiled module from site-packages."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # the process has already ended
        return True
    return any(line.endswith(".so") and SITE_PACKAGES in line for line in maps.splitlines())


def _as_at_a_terminal() -> None:
    """Ctrl-C's default action, which a command started in the background (as test runners
    often are) inherits as "ignore"."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_command_line(process: subprocess.Popen[str], limit_s: float = 60.0) -> None:
    deadline = time.monotonic() + limit_s
    while not _loads_installed_extension(process.pid):
        assert process.poll() is None, "combee ended before it loaded its command line"
        assert time.monotonic() < deadline, f"combee loaded no extension in {limit_s} s"
        time.sleep(0.001)


@pytest.mark.parametrize("after_s", [0.0, 0.05, 0.2, 0.5])
def test_ctrl_c_during_start_up(after_s: float) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    process = subprocess.Popen(
        [COMBEE, "train", "--model", "sim", "--base-url", "http://127.0.0.1:9/v1"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_at_a_terminal,
    )  # fmt: skip
    _wait_for_command_line(process)
    time.sleep(after_s)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert process.returncode in (1, 130), stderr  # 1: it had already failed to connect


def test_the_signal_lands_while_the_command_line_loads() -> None:
    """The moment waited for comes before the command line has loaded, so the test above
    exercises start-up and not only a running command."""
    process = subprocess.Popen(
        [COMBEE, "--help"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_as_at_a_terminal,
    )  # fmt: skip
    _wait_for_command_line(process)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, (process.returncode, stderr)
    assert "Usage" not in stdout  # the help was never printed: the signal came first
    assert stderr.strip() == "interrupted"
