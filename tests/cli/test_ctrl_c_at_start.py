"""Ctrl-C while the command line is still loading ends quietly (exit 130), never a traceback.

Before the first line of ``combee`` runs, the interpreter starts and reads our entry module:
that window is Python's own, and no program can catch a signal in it. Neither ``combee`` nor
its entry module imports anything, so the first compiled extension module (the standard
library's or an installed package's) that the process maps beyond those a bare interpreter
maps is loaded by the command line itself, inside the entry point's guard. The test waits for
that moment (read from ``/proc``, not guessed from timings, which a busy machine upsets) and
sends the signal then, or a little later."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from tests.cli_helpers import COMBEE

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")


def _extensions(maps: str) -> set[str]:
    lines = (line.rstrip() for line in maps.splitlines())
    return {line.split()[-1] for line in lines if line.endswith(tuple(EXTENSION_SUFFIXES))}


@pytest.fixture(scope="module")
def bare_extensions() -> frozenset[str]:
    """The extension modules the interpreter maps as it starts (site and .pth files)."""
    own_maps = "print(open('/proc/self/maps').read())"
    found = subprocess.run(
        [sys.executable, "-c", own_maps], capture_output=True, text=True, check=True
    )
    return frozenset(_extensions(found.stdout))


def _loads_extension(pid: int, bare: frozenset[str]) -> bool:
    """Whether the process has mapped an extension module a bare interpreter does not."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:  # the process has already ended
        return True
    return bool(_extensions(maps) - bare)


def _as_at_a_terminal() -> None:
    """Ctrl-C's default action, which a command started in the background (as test runners
    often are) inherits as "ignore"."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_command_line(
    process: subprocess.Popen[str], bare: frozenset[str], limit_s: float = 60.0
) -> None:
    deadline = time.monotonic() + limit_s
    while not _loads_extension(process.pid, bare):
        assert process.poll() is None, "combee ended before it loaded its command line"
        assert time.monotonic() < deadline, f"combee loaded no extension in {limit_s} s"
        time.sleep(0.001)


@pytest.mark.parametrize("after_s", [0.0, 0.05, 0.2, 0.5])
def test_ctrl_c_during_start_up(after_s: float, bare_extensions: frozenset[str]) -> None:
    env = {**os.environ, "NO_COLOR": "1"}
    process = subprocess.Popen(
        [COMBEE, "train", "--model", "sim", "--base-url", "http://127.0.0.1:9/v1"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_at_a_terminal,
    )  # fmt: skip
    _wait_for_command_line(process, bare_extensions)
    time.sleep(after_s)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert "Traceback" not in stderr, stderr
    assert process.returncode in (1, 130), stderr  # 1: it had already failed to connect


def test_the_signal_lands_while_the_command_line_loads(bare_extensions: frozenset[str]) -> None:
    """The moment waited for comes before the command line has loaded, so the test above
    exercises start-up and not only a running command."""
    process = subprocess.Popen(
        [COMBEE, "--help"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_as_at_a_terminal,
    )  # fmt: skip
    _wait_for_command_line(process, bare_extensions)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, (process.returncode, stderr)
    assert "Usage" not in stdout  # the help was never printed: the signal came first
    assert stderr.strip() == "interrupted"
