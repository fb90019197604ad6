"""A PostgreSQL server of a test's own: ``initdb`` in a temporary folder, ``pg_ctl`` on a free
loopback port, trust authentication, stopped (and started again) at will. Run as root, the
server runs as the ``postgres`` user (PostgreSQL refuses root)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from combee.bench.server_process import free_port


class PostgresServer:
    def __init__(self, folder: Path) -> None:
        if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
            pytest.skip("PostgreSQL's initdb and pg_ctl are not on PATH")
        self.folder = folder
        self.data = folder / "data"
        self.port = free_port()
        self.url = f"postgresql://combee@127.0.0.1:{self.port}/postgres"
        folder.mkdir(parents=True, exist_ok=True)
        self._as_owner: list[str] = []
        if os.geteuid() == 0:
            shutil.chown(folder, user="postgres")
            self._as_owner = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "combee", "--no-sync")
        self.start()

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [*self._as_owner, *command], capture_output=True, text=True, timeout=120
        )
        if done.returncode != 0:
            raise AssertionError(f"{command[0]} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        options = f"-p {self.port} -h 127.0.0.1 -k {self.folder} -c max_connections=300"
        log = str(self.folder / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
