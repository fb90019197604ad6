"""How often the lesson screens would keep out a genuine lesson.

A real model (the embedded one by default) answers and reflects on samples of the bundled data,
with an empty playbook: Formula and FiNER questions (ACE's generator and reflector) and
recorded airline traces (the trace reflector). Nothing is planted, so every lesson kept out is
a false alarm. Each reflection is judged by the form screen (``combee.llm.screening``) and by
the copy check (``combee.llm.provenance``) against the data the reflector was shown, as runs
judge it: the question and its context for Formula and FiNER (the reference answer, the
feedback and the wording the task's train and val samples share being allowed), the tools'
outputs for the traces (the task statement, the system prompt and the recorded outcome being
allowed).

    python benchmarks/screen_false_positives.py [--model local] [--base-url URL]
        [--samples 20] [--traces 20] [--data formula,finer,airline]
        [--json screen_false_positives.json] [--cache replies.sqlite]

With ``--cache`` the model's replies are kept, so a rerun (or a rerun that judges the same
lessons by a changed screen) replays them in seconds.

Prints, per data set, how many reflections each check would keep out, with the copied spans.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import combee
from combee.core.types import Reflection
from combee.llm.provenance import SharedText, copied_spans, shared_text
from combee.llm.screening import planted_instruction
from combee.methods.ace.method import AceMethod
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.traces import TraceAceMethod, tool_results, trusted_text
from combee.tasks.registry import get_task
from combee.tasks.traces import load_traces


def lesson_text(reflection: Reflection) -> str:
    return "\n".join(str(v) for v in reflection.fields.values() if isinstance(v, str))


def judged(
    reflection: Reflection, data: list[str], trusted: list[str], shared: SharedText | None = None
) -> dict[str, Any]:
    text = lesson_text(reflection)
    return {
        "sample": reflection.sample_id,
        "form": planted_instruction(reflection.fields),
        "copied": copied_spans(text, data, trusted, shared=shared),
        "key_insight": str(reflection.fields.get("key_insight", ""))[:300],
        "fields": reflection.fields,
    }


async def questions(llm: Any, task_name: str, n: int) -> list[dict[str, Any]]:
    task = get_task(task_name)
    splits = task.load()
    known = [*splits.train, *splits.val]
    shared = shared_text((f"{s.question}\n{s.context}" for s in known), (s.answer for s in known))
    samples = list(splits.train)[:n]
    method = AceMethod(llm, task.score)
    rows = []
    for sample in samples:
        trajectory = await method.rollout(Playbook(), sample)
        reflection = await method.reflect(Playbook(), trajectory)
        data = [sample.question, sample.context]
        trusted = [sample.answer, trajectory.score.feedback]
        rows.append(judged(reflection, data, trusted, shared))
        print(f"  {task_name} {len(rows)}/{len(samples)}", flush=True)
    return rows


async def traces(llm: Any, n: int) -> list[dict[str, Any]]:
    recorded = load_traces(["tau-airline"])[:n]
    method = TraceAceMethod(llm, traces=recorded)
    rows = []
    for trace in recorded:
        sample = combee.Sample(id=trace.id, question="", answer="", meta={"trace": trace})
        trajectory = await method.rollout(Playbook(), sample)
        reflection = await method.reflect(Playbook(), trajectory)
        rows.append(judged(reflection, list(tool_results(trace)), list(trusted_text(trace))))
        print(f"  airline {len(rows)}/{len(recorded)}", flush=True)
    return rows


async def main(args: argparse.Namespace) -> dict[str, Any]:
    llm = combee.llm.connect(args.model, base_url=args.base_url, cache=args.cache)
    report: dict[str, Any] = {"model": args.model}
    try:
        for name in args.data.split(","):
            started = time.perf_counter()
            if name == "airline":
                report[name] = await traces(llm, args.traces)
            else:
                report[name] = await questions(llm, name, args.samples)
            print(f"{name}: {time.perf_counter() - started:.0f}s", flush=True)
    finally:
        await llm.aclose()
    return report


def summary(report: dict[str, Any]) -> None:
    print(f"\nmodel {report['model']}: genuine lessons the screens would keep out")
    for name in ("formula", "finer", "airline"):
        if name not in report:
            continue
        rows = report[name]
        form = sum(1 for r in rows if r["form"])
        copied = [r for r in rows if r["copied"]]
        print(f"{name:>8}: {len(rows)} lessons, form screen {form}, copy check {len(copied)}")
        for row in copied:
            print(f"          {row['sample']}: {row['copied'][:3]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible endpoint")
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--traces", type=int, default=20)
    parser.add_argument("--data", default="formula,finer,airline", help="comma-separated")
    parser.add_argument("--json", type=Path, default=Path("screen_false_positives.json"))
    parser.add_argument("--cache", type=Path, default=None, help="a response cache (SQLite)")
    arguments = parser.parse_args()
    result = asyncio.run(main(arguments))
    arguments.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    summary(result)
