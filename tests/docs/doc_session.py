"""Running a document's blocks against the scripted server, in order, in a folder of their own.

The rule a block runs by, so that a doc needs no test-only edits:

- The endpoint is the scripted server (``combee sim-server``'s ACE script, GEPA's for GEPA's
  requests) on 127.0.0.1: ``OPENAI_BASE_URL`` points at it, ``OPENAI_API_KEY`` is a placeholder
  (no other ``*_API_KEY`` is passed on) and ``COMBEE_MODEL=sim``. A hosted model name in a doc
  (``--model gpt-4o-mini``, ``combee.llm.Endpoint("gpt-4o-mini")``) is therefore served by the
  scripted server, and a command without ``--model`` uses it instead of the embedded model.
- Ports: a port a block of the document listens on (``--port N``) becomes a free port, the same in
  every block of the document; any other loopback address (``127.0.0.1:N``, ``localhost:N``)
  stands for the scripted server. After a backgrounded line (``... &``) that listens on a port,
  the block waits until that port answers.
- Files: the blocks of one document run in order in one empty folder (``runs/...`` is written
  there) and Python blocks share one namespace, so a later block sees what an earlier one made.
  Whatever a block left running in the background is stopped when the document ends.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from combee.sim.ace_script import ace_responder
from combee.sim.gepa_script import gepa_responder, gepa_role
from tests.docs.doc_blocks import DocBlock

BIN = Path(sys.executable).parent
SHELL_TIMEOUT = 300.0
_ACE_ROLES = frozenset({"generator", "next_action", "reflector", "curator", "merge", "summarize"})
_LISTENS = re.compile(r"--port[ =](\d+)")
_LOOPBACK = re.compile(r"\b(127\.0\.0\.1|localhost):(\d+)")
_WAIT = """doc_test_wait_for_port() {
  for _ in $(seq 600); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done
  echo "doc-test: nothing listens on port $1 after 60 s" >&2; return 1
}
"""


def doc_responder(body: Mapping[str, Any]) -> str:
    """The scripted model every doc talks to: ACE's roles, GEPA's for a request of GEPA's."""
    response_format = body.get("response_format")
    spec = response_format.get("json_schema") if isinstance(response_format, Mapping) else None
    name = spec.get("name") if isinstance(spec, Mapping) else None
    if name not in _ACE_ROLES and gepa_role(body) is not None:
        return gepa_responder(body)
    return ace_responder(body)


class DocSession:
    """One document's run: its folder, its ports, its background processes, its namespace."""

    def __init__(self, blocks: list[DocBlock], folder: Path, endpoint: str) -> None:
        self.folder = folder
        self.endpoint = endpoint
        endpoint_port = int(endpoint.rsplit(":", 1)[1].split("/")[0])
        own = {int(p) for b in blocks if b.shell for p in _LISTENS.findall(b.source)}
        self.ports = {port: _free_port() for port in sorted(own)}
        self.other_port = endpoint_port
        self.namespace: dict[str, Any] = {"__name__": "__doc__"}
        self.groups: list[int] = []
        self.runs = 0

    def env(self) -> dict[str, str]:
        kept = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        for name in ("COMBEE_BASE_URL", "MLFLOW_TRACKING_URI", "OPENAI_API_BASE"):
            kept.pop(name, None)
        # A relative PYTHONPATH (src, to test a checkout) would not reach the block's folder.
        python_path = [p for p in kept.get("PYTHONPATH", "").split(os.pathsep) if p]
        return {
            **kept,
            "PYTHONPATH": os.pathsep.join(str(Path(p).resolve()) for p in python_path),
            "PATH": f"{BIN}{os.pathsep}{kept.get('PATH', '')}",
            "OPENAI_BASE_URL": self.endpoint,
            "OPENAI_API_KEY": "doc-test-placeholder",
            "COMBEE_MODEL": "sim",
            "NO_COLOR": "1",
            # DSPy's LiteLLM: its bundled price list, not one fetched from the network.
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }

    def prepared(self, block: DocBlock) -> str:
        """The block as it runs: its ``run with`` values in place, its ports mapped."""
        source = block.source
        for flag, value in block.run_with:
            pattern = re.compile(rf"(?<![\w-]){re.escape(flag)}[ =](\"[^\"]*\"|[^\s\"]+)")
            if not pattern.search(source):
                raise AssertionError(f"{block.name}: 'run with {flag}': the block has no {flag}")
            source = pattern.sub(f"{flag} {value}", source)
        return self.rewrite(source)

    def rewrite(self, source: str) -> str:
        """The source with its ports mapped (see the module's rule)."""
        source = _LISTENS.sub(lambda m: f"--port {self._port(int(m.group(1)))}", source)
        return _LOOPBACK.sub(lambda m: f"{m.group(1)}:{self._port(int(m.group(2)))}", source)

    def run_shell(self, block: DocBlock) -> None:
        self.runs += 1
        script = self.folder / f".doc-test-{self.runs}.sh"
        script.write_text(_WAIT + "set -euo pipefail\n" + _with_waits(self.prepared(block)))
        log = self.folder / f".doc-test-{self.runs}.log"
        with log.open("w") as output:
            process = subprocess.Popen(
                ["bash", str(script)],
                cwd=self.folder,
                env=self.env(),
                stdin=subprocess.DEVNULL,
                stdout=output,  # a file, not a pipe: a server left in the background keeps it open
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            self.groups.append(process.pid)
            try:
                code = process.wait(timeout=SHELL_TIMEOUT)
            except subprocess.TimeoutExpired:
                code = None
        if code != 0:
            ended = "timed out" if code is None else f"exited {code}"
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
            raise AssertionError(f"{block.name}: the block {ended}:\n{tail}")

    def run_python(self, block: DocBlock) -> None:
        code = compile("\n" * block.line + self.prepared(block), str(block.path), "exec")
        with _inside(self.folder, self.env()):
            exec(code, self.namespace)

    def close(self) -> None:
        for group in self.groups:
            with suppress(ProcessLookupError):
                os.killpg(group, signal.SIGTERM)

    def _port(self, port: int) -> int:
        return self.ports.get(port, self.other_port)


def _with_waits(source: str) -> str:
    lines = []
    for line in source.replace("\\\n", " ").splitlines():
        lines.append(line)
        if line.split("#", 1)[0].rstrip().endswith("&"):
            lines += [f"doc_test_wait_for_port {port}" for port in _LISTENS.findall(line)]
    return "\n".join(lines) + "\n"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _inside(folder: Path, env: dict[str, str]) -> Iterator[None]:
    saved_env, saved_cwd = dict(os.environ), Path.cwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
