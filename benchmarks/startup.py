"""Start-up time: ``import combee``, ``combee --help`` and ``combee train --help``.

Each command runs ``--runs`` times, each time in a fresh interpreter (the one running this
script), after one untimed run; the figures are the best and the median wall time. The two
commands go through the ``combee`` entry point, as the installed script does. The load average
is printed with the figures: on a busy machine start-up times grow with it.

Bytecode is cached, as for an installed package, in a temporary folder (the source tree is
left as it is); ``--no-bytecode-cache`` compiles every module from source on every run
instead, as Python does when it may not write ``__pycache__`` (PYTHONDONTWRITEBYTECODE).

    python benchmarks/startup.py [--runs 7] [--no-bytecode-cache]

Targets on a quiet machine: ``import combee`` under 0.3 s, ``combee --help`` under 0.5 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ENTRY = "import sys; from combee.cli.entry import main; sys.argv[0] = 'combee'; main()"
COMMANDS: dict[str, list[str]] = {
    "import combee": ["-c", "import combee"],
    "combee --help": ["-c", ENTRY, "--help"],
    "combee train --help": ["-c", ENTRY, "train", "--help"],
}


def wall_times(arguments: list[str], runs: int, env: dict[str, str]) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, *arguments], check=True, stdout=subprocess.DEVNULL, env=env)
        times.append(time.perf_counter() - started)
    return times


def child_environment(cache_folder: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if cache_folder is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache_folder
    return env


def measure(runs: int, env: dict[str, str]) -> None:
    for arguments in COMMANDS.values():  # untimed: fills the caches
        wall_times(arguments, 1, env)
    load_before = os.getloadavg()
    print(f"{'command':<22} {'best':>7} {'median':>7}   ({runs} fresh processes each)")
    for name, arguments in COMMANDS.items():
        times = wall_times(arguments, runs, env)
        print(f"{name:<22} {min(times):>6.3f}s {statistics.median(times):>6.3f}s")
    load_after = os.getloadavg()
    print("load average (1, 5, 15 min): before " + ", ".join(f"{x:.2f}" for x in load_before))
    print("                             after  " + ", ".join(f"{x:.2f}" for x in load_after))
    print(f"cores: {os.cpu_count()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per command")
    parser.add_argument(
        "--no-bytecode-cache",
        action="store_true",
        help="compile every module from source on every run",
    )
    args = parser.parse_args()
    if args.no_bytecode_cache:
        print("bytecode: compiled from source on every run")
        measure(args.runs, child_environment(None))
        return
    with tempfile.TemporaryDirectory(prefix="combee-startup-") as cache_folder:
        print("bytecode: cached")
        measure(args.runs, child_environment(cache_folder))


if __name__ == "__main__":
    main()
