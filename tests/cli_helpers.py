"""Run the installed ``combee`` command in a subprocess, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COMBEE = str(Path(sys.executable).with_name("combee"))


def run_combee(
    *args: str, env: dict[str, str] | None = None, timeout: float = 180.0
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [COMBEE, *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
    )
