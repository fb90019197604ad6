"""The embedded model as the gateway's upstream: llama.cpp's own OpenAI-compatible server.

``combee serve --upstream local`` (or ``local:smollm2``, ``local:PATH.gguf``) starts
``python -m llama_cpp.server`` (the ``local`` extra) on a free loopback port with the model
Combee's embedded backend uses, waits until it answers, and stops it with the gateway. It runs
as many threads as cores are free when it starts: more llama.cpp threads than free cores slow
every call far more than in proportion.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from combee.errors import ConfigError

MODEL_ALIAS = "local"
"""The model name the local server answers to (requests naming another are served too)."""
_START_S = 300.0


def is_local(upstream: str) -> bool:
    return upstream == "local" or upstream.startswith("local:")


class LocalUpstream:
    """``llama_cpp.server`` for ``spec`` in a child process (:meth:`stop` ends it)."""

    def __init__(self, spec: str, *, context_window: int = 8192) -> None:
        from combee.llm.local.models import resolve_local_model
        from combee.llm.local.threads import FreeCores, available_cores

        try:
            import llama_cpp.server  # noqa: F401 - only whether it is installed
        except ImportError:
            raise ConfigError(
                "the embedded model as upstream needs llama.cpp's server: pip install "
                "'combee[local]' (llama-cpp-python[server])",
                setting="upstream",
            ) from None
        model = resolve_local_model("local" if spec == "local" else spec)
        threads = max(1, FreeCores(available_cores()).measure())
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        self.base_url = f"http://127.0.0.1:{port}/v1"
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self._process = subprocess.Popen(
            [
                sys.executable, "-m", "llama_cpp.server", "--model", str(model),
                "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(port),
                "--n_ctx", str(context_window), "--n_threads", str(threads),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.model = Path(model).name
        self._wait()

    def _wait(self) -> None:
        deadline = time.monotonic() + _START_S
        while True:
            if self._process.poll() is not None:
                self._log.seek(0)
                tail = self._log.read().decode(errors="replace").strip()[-500:]
                raise ConfigError(f"llama.cpp's server exited at start: {tail}", setting="upstream")
            try:
                with urllib.request.urlopen(self.base_url + "/models", timeout=2):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise ConfigError(
                        f"llama.cpp's server did not answer within {_START_S:g} s",
                        setting="upstream",
                    ) from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()
