"""Speed of the embedded SmolLM2 model on a quiet CPU and on one busy with other processes.

For each setting, a fresh process loads SmolLM2-135M and measures, several times, the prompt
speed (one prompt of ``--prompt-tokens`` tokens read from an empty context) and the generation
speed (``--gen-tokens`` tokens written greedily after it). The same measurement then runs again
while ``--competitors`` CPU-bound processes (``while True: pass``, started and killed here)
compete for the cores. A setting is a thread count and how llama.cpp's threads wait for each
other between steps:

- ``before``: what the backend did first: ``n_threads`` = ``n_threads_batch`` = every core,
  llama.cpp's default waiting (this wheel uses OpenMP, whose threads spin before sleeping);
- ``backend``: :class:`~combee.llm.local.backend.LocalBackend` with its defaults as they are now;
- ``T/POLICY``: ``T`` threads (a number) and an OpenMP waiting policy: ``spin`` (the default),
  ``spinN`` (``GOMP_SPINCOUNT=N``), ``passive`` (``OMP_WAIT_POLICY=PASSIVE``: sleep at once)
  or ``active``.

    python benchmarks/local_busy_cpu.py [--settings before,backend,1/spin,2/passive]
        [--reps 3] [--prompt-tokens 1000] [--gen-tokens 64] [--competitors 2]
        [--json local_busy_cpu.json]

Prints a table of the medians (tokens per second, and how many times slower busy than quiet)
and writes every repetition as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

POLICIES: dict[str, dict[str, str]] = {
    "spin": {},
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "active": {"OMP_WAIT_POLICY": "ACTIVE"},
}


def policy_env(policy: str) -> dict[str, str]:
    """The environment of an OpenMP waiting policy: a name above or ``spinN`` (spin N times)."""
    if policy in POLICIES:
        return POLICIES[policy]
    if policy.startswith("spin") and policy[4:].isdigit():
        return {"GOMP_SPINCOUNT": policy[4:]}
    raise SystemExit(f"unknown waiting policy {policy!r}")


WAIT_VARIABLES = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "COMBEE_LOCAL_THREADS")
COMPETITOR = "while True: pass"


def prompt_text() -> str:
    """Prose with varied numbers (a repeated sentence would be unrealistically cheap to read)."""
    lines = [
        f"Entry {i}: the account {1000 + 37 * i} moved {i * 13 % 97}.{i % 10} units to ledger "
        f"{chr(65 + i % 26)}{i % 7} on day {i % 28 + 1}, after review number {i * 7 % 53}."
        for i in range(200)
    ]
    return "\n".join(lines)


# The child: one setting, one process.


def child(setting: str, reps: int, prompt_tokens: int, gen_tokens: int) -> dict[str, Any]:
    if setting != "backend":
        # Loaded before the backend module can choose the waiting policy: the environment
        # the parent gave is the one OpenMP reads.
        import llama_cpp

    from combee.llm.local.backend import LocalBackend
    from combee.llm.local.library import import_llama_cpp
    from combee.llm.local.models import resolve_local_model
    from combee.llm.local.threads import available_cores

    model = str(resolve_local_model("local:smollm2"))
    n_ctx = prompt_tokens + gen_tokens + 64
    if setting == "backend":
        backend = LocalBackend(model, n_ctx=n_ctx, progress_every_s=None)
        llama: Any = backend._ensure_loaded()
        threads: Any = backend.n_threads
        # What the backend does before each call (it may adapt the thread count).
        apply = getattr(backend, "_apply_threads", None)
    else:
        llama_cpp = import_llama_cpp()
        threads = available_cores() if setting == "before" else int(setting.split("/")[0])
        llama = llama_cpp.Llama(
            model_path=model,
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            seed=0,
            verbose=False,
        )
        apply = None
    tokens = llama.tokenize(prompt_text().encode(), add_bos=True)[:prompt_tokens]
    if len(tokens) < prompt_tokens:
        raise SystemExit(f"the prompt has only {len(tokens)} tokens")
    runs: list[dict[str, Any]] = []
    for rep in range(reps + 1):  # the first is a warm-up
        used = apply(llama) if apply is not None else threads
        llama.reset()
        started = time.perf_counter()
        llama.eval(tokens)
        read = time.perf_counter() - started
        started = time.perf_counter()
        for _ in range(gen_tokens):
            token = llama.sample(top_k=1, temp=0.0)
            llama.eval([token])
        written = time.perf_counter() - started
        if rep:
            runs.append(
                {
                    "threads": used,
                    "prompt_tok_s": prompt_tokens / read,
                    "gen_tok_s": gen_tokens / written,
                    "prompt_s": read,
                    "gen_s": written,
                }
            )
        print(
            f"    rep {rep}{' (warm-up)' if not rep else ''}: threads {used}, "
            f"prompt {prompt_tokens / read:.0f} tok/s, gen {gen_tokens / written:.1f} tok/s",
            file=sys.stderr,
            flush=True,
        )
    return {"setting": setting, "threads": threads, "runs": runs}


# The parent: settings x (quiet, busy).


def machine_busy() -> tuple[float, float]:
    """Busy CPU seconds of the whole machine and of this process's finished children."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(value) for value in stat.readline().split()[1:9]]
    hertz = os.sysconf("SC_CLK_TCK")
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (sum(ticks) - ticks[3] - ticks[4]) / hertz, children.ru_utime + children.ru_stime


def wait_for_quiet(limit_s: float) -> float:
    """Wait (up to ``limit_s``) until other processes use under 0.2 cores over 2 s; return it."""
    deadline = time.monotonic() + limit_s
    while True:
        before, _ = machine_busy()
        time.sleep(2.0)
        after, _ = machine_busy()
        others = (after - before) / 2.0
        if others < 0.2 or time.monotonic() > deadline:
            return others


def run_setting(setting: str, args: argparse.Namespace, busy: bool) -> dict[str, Any]:
    if not busy:
        others = wait_for_quiet(args.quiet_wait)
        print(f"  other processes before the run: {others:.2f} cores", file=sys.stderr)
    env = {k: v for k, v in os.environ.items() if k not in WAIT_VARIABLES}
    if "/" in setting:
        env.update(policy_env(setting.split("/")[1]))
    competitors: list[subprocess.Popen[bytes]] = []
    if busy:
        competitors = [
            subprocess.Popen([sys.executable, "-c", COMPETITOR]) for _ in range(args.competitors)
        ]
        time.sleep(1.0)
    machine_before, children_before = machine_busy()
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", setting, "--reps", str(args.reps),
             "--prompt-tokens", str(args.prompt_tokens), "--gen-tokens", str(args.gen_tokens)],
            env=env, stdout=subprocess.PIPE, check=True, text=True,
        )  # fmt: skip
    finally:
        for process in competitors:
            process.kill()
        for process in competitors:
            process.wait()
    machine_after, children_after = machine_busy()
    elapsed = time.monotonic() - started
    foreign = (machine_after - machine_before) - (children_after - children_before)
    result: dict[str, Any] = json.loads(done.stdout)
    # CPU used by processes other than the child and the competitors, in cores: a "quiet" run
    # with a high figure here was not quiet.
    result["foreign_cores"] = max(0.0, foreign) / elapsed
    result["busy"] = busy
    result["competitors"] = args.competitors if busy else 0
    return result


def median(result: dict[str, Any], key: str) -> float:
    return statistics.median(run[key] for run in result["runs"])


def table(results: list[dict[str, Any]], competitors: int) -> str:
    header = (
        f"{'setting':<12} {'threads':>7} | {'prompt tok/s':>12} {'busy':>7} {'x':>5} | "
        f"{'gen tok/s':>9} {'busy':>7} {'x':>5} | {'others':>9}"
    )
    lines = [
        f"(medians; 'busy' = with {competitors} CPU-bound competitors; 'others' = cores used "
        "by other processes during the quiet/busy runs)",
        header,
    ]
    lines.append("-" * len(header))
    by_setting: dict[str, dict[bool, dict[str, Any]]] = {}
    for result in results:
        by_setting.setdefault(result["setting"], {})[result["busy"]] = result
    for setting, pair in by_setting.items():
        quiet, busy = pair.get(False), pair.get(True)
        cells = []
        for key in ("prompt_tok_s", "gen_tok_s"):
            q = median(quiet, key) if quiet else float("nan")
            b = median(busy, key) if busy else float("nan")
            cells.append(f"{q:>{12 if key == 'prompt_tok_s' else 9}.1f} {b:>7.1f} {q / b:>4.1f}x")
        threads = sorted({run["threads"] for r in pair.values() for run in r["runs"]})
        shown = "/".join(str(t) for t in threads)
        foreign = "/".join(f"{pair[b]['foreign_cores']:.2f}" for b in (False, True) if b in pair)
        lines.append(f"{setting:<12} {shown:>7} | {cells[0]} | {cells[1]} | {foreign:>9}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--settings", default="before,backend")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--prompt-tokens", type=int, default=1000)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--competitors", type=int, default=2)
    parser.add_argument("--json", type=Path, default=Path("local_busy_cpu.json"))
    parser.add_argument("--quiet-wait", type=float, default=300.0)
    parser.add_argument("--only", choices=("quiet", "busy"), default=None)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.reps, args.prompt_tokens, args.gen_tokens)))
        return
    results = []
    for setting in args.settings.split(","):
        for busy in (False, True):
            if args.only is not None and busy != (args.only == "busy"):
                continue
            load = os.getloadavg()[0]
            print(
                f"{setting}, {'busy' if busy else 'quiet'} (load average {load:.2f})",
                file=sys.stderr,
                flush=True,
            )
            results.append(run_setting(setting, args, busy))
    print(table(results, args.competitors))
    args.json.write_text(json.dumps({"cores": os.cpu_count(), "results": results}, indent=1))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
