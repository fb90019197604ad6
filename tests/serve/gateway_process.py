"""``combee serve`` in a process of its own (killed with ``kill -9`` or stopped as a signal
would), for tests of what survives a process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

from combee.bench.server_process import free_port


class GatewayProcess:
    """``combee serve --upstream UPSTREAM --store STORE`` on a free port, with ``flags`` added,
    started and answering ``/healthz``; ``operator`` is its operator token."""

    def __init__(self, upstream: str, store: str, *flags: str, operator: str) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "combee.cli.main", "serve", "--upstream", upstream,
                "--model", "sim", "--store", store, "--port", str(port), "--learn-every", "0",
                "--batch-size", "10", *flags,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={
                **os.environ, "COMBEE_SERVE_TOKEN": "", "COMBEE_AGENT_TOKEN": "",
                "COMBEE_OPERATOR_TOKEN": operator,
            },
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/healthz", timeout=2):
                    return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    _, errors = self.process.communicate(timeout=10)
                    raise AssertionError(f"the gateway did not start: {errors.decode()}") from None
                time.sleep(0.1)

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)
