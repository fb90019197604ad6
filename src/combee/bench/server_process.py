"""``combee sim-server`` in its own process, so it never competes for the client's GIL."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

from combee.errors import ConfigError
from combee.sim.config import SimConfig
from combee.sim.request_log import read_request_log

_FLAGS = {
    "seed": "--seed",
    "ttft_s": "--ttft",
    "decode_tokens_per_s": "--decode-tps",
    "prompt_tokens_per_s": "--prompt-tps",
    "capacity": "--capacity",
    "jitter": "--jitter",
    "straggler_rate": "--straggler-rate",
    "straggler_factor": "--straggler-factor",
    "rate_429": "--rate-429",
    "retry_after_s": "--retry-after",
    "rate_500": "--rate-500",
    "rate_hang": "--rate-hang",
    "hang_s": "--hang-s",
    "rate_bad_body": "--rate-bad-body",
}


def sim_server_flags(config: SimConfig) -> list[str]:
    """The ``combee sim-server`` flags that reproduce ``config`` (defaults left out)."""
    default = SimConfig()
    flags: list[str] = []
    for name, flag in _FLAGS.items():
        value = getattr(config, name)
        if value is not None and value != getattr(default, name):
            flags += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return flags


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class SimServerProcess:
    """Starts ``python -m combee.cli.main sim-server ...`` and waits until it answers."""

    def __init__(self, config: SimConfig, *, script: str = "ace") -> None:
        self.config = config
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._folder = Path(tempfile.mkdtemp(prefix="combee-sim-"))
        self.request_log = self._folder / "requests.jsonl"
        """The server's own log of when it held each request (see :mod:`combee.sim.request_log`)."""
        self.argv = [
            sys.executable,
            "-m",
            "combee.cli.main",
            "sim-server",
            "--port",
            str(self.port),
            "--script",
            script,
            "--log",
            str(self.request_log),
            *sim_server_flags(config),
        ]
        self._process: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()

    @property
    def command(self) -> str:
        """The equivalent shell command, for reports."""
        argv = self.argv[3:]
        at = argv.index("--log")
        return " ".join(["combee", *argv[:at], *argv[at + 2 :]])

    def request_intervals(self) -> list[tuple[float, float]]:
        """When the server held each chat request so far: ``(arrived, finished)`` wall-clock
        seconds, from its own log."""
        return read_request_log(self.request_log)

    def start(self, timeout_s: float = 60.0) -> None:
        # A file, not a pipe: a server that logs much must never block on a full pipe.
        self._process = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._log.seek(0)
                error = self._log.read().decode(errors="replace")
                raise ConfigError(f"the simulated server exited at start: {error.strip()[-300:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=1.0):
                    return
            except (urllib.error.URLError, OSError):
                time.sleep(0.1)
        self.stop()
        raise ConfigError(f"the simulated server did not answer within {timeout_s:g} s")

    def cpu_seconds(self) -> float | None:
        """CPU time the server process has used so far (Linux only; None elsewhere)."""
        if self._process is None:
            return None
        try:
            with open(f"/proc/{self._process.pid}/stat", encoding="ascii") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        ticks = int(fields[11]) + int(fields[12])  # utime + stime
        return ticks / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        process = self._process
        if process is None:
            return
        self._process = None
        process.terminate()
        try:
            process.wait(timeout=10.0)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._log.close()
        shutil.rmtree(self._folder, ignore_errors=True)

    def __enter__(self) -> SimServerProcess:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
