"""Where each rule of the `rules` task was lost, in one cell of the quality grid.

Runs one cell (strategy, batch size, seed) of the grid in docs/quality.md with the same settings
and the same response cache, so a cell the grid already ran is replayed from the cache in
seconds, and follows each entity's rule through the run:

- ``reflector``: no reflection on the entity's training questions states the rule;
- ``curator``: a reflection stated it, but no curator's update (after the coverage step of
  :mod:`combee.methods.ace.coverage`) and no reduced update did;
- ``merge``: a curator's update stated it, the batch's reduced update did not;
- ``apply``: the reduced update stated it, the final playbook does not (a repeat folded away,
  a rejected operation, or eviction under the token budget);
- ``generator``: the final playbook states it, the test question was still answered wrong;
- ``kept``: stated in the final playbook and answered right (``no rule``: right without it).

"States the rule" is the check of benchmarks/rules_lessons.py (the rule's value with the
entity's name, unit or code).

    python benchmarks/rules_losses.py --strategy combee --batch 32 [--seed 0]
        [--task rules|rules-unstated] [--repairs on|off] [--context-window 32768]
        [--model local] [--cache cells/cache.sqlite] [--json losses.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from rules_lessons import states_rule

import combee
from combee.core.evaluate import Evaluation
from combee.core.loop import IterationReport, LoopObserver
from combee.llm.connect import connect
from combee.methods.ace.method import AceMethod
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.settings import REPAIRS
from combee.methods.ace.update import AceUpdate
from combee.tasks.rules import RulesTask

STAGES = ("reflector", "curator", "merge", "apply", "generator", "kept", "no rule")


class Recorder(LoopObserver):
    """The reflections, reduced updates and test answers of one run."""

    def __init__(self) -> None:
        self.lessons: list[tuple[str, str]] = []  # (sample id, lesson)
        self.reduced: list[str] = []
        self.final = ""
        self.test: dict[str, bool] = {}

    def on_iteration_end(self, report: IterationReport[Any, Any]) -> None:
        for reflection in report.reflections:
            self.lessons.append((reflection.sample_id, str(reflection.fields.get("key_insight"))))
        update = report.trace.update
        for op in getattr(update, "operations", ()):
            self.reduced.append(str(op.get("content", "")))
        if isinstance(report.context, Playbook):
            self.final = report.context.render()

    def on_evaluation_end(self, label: str, evaluation: Evaluation, seconds: float) -> None:
        if label == "test":
            self.test = {t.sample.id: t.score.correct for t in evaluation.trajectories}


def stage(entity: Any, recorder: Recorder, curated: Sequence[str], samples: dict[str, Any]) -> str:
    def stated(texts: Sequence[str]) -> bool:
        return any(states_rule(t, entity.name, entity.kind, entity.rule) for t in texts)

    def of_entity(sample_id: str) -> bool:
        return bool(samples[sample_id].meta["entity"] == entity.name)

    mine = [lesson for sid, lesson in recorder.lessons if of_entity(sid)]
    tests = [ok for sid, ok in recorder.test.items() if of_entity(sid)]
    right = bool(tests) and all(tests)
    if stated([recorder.final]):
        return "kept" if right else "generator"
    if right:
        return "no rule"
    if not stated(mine):
        return "reflector"
    if stated(recorder.reduced):
        return "apply"
    return "merge" if stated(curated) else "curator"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    # The run's seed makes the task's entities, as a run does.
    task = RulesTask(seed=args.seed, state_rule=args.task == "rules")
    splits = task.load()
    samples = {s.id: s for s in [*splits.train, *splits.test]}
    llm = connect(
        args.model,
        base_url=args.base_url,
        cache=args.cache,
        seed=args.seed,
        context_window=args.context_window,
    )
    curated: list[str] = []
    curate = AceMethod.curate

    async def recording(self: AceMethod, context: Playbook, reflections: Any) -> AceUpdate:
        update = await curate(self, context, reflections)
        curated.extend(str(op.get("content", "")) for op in update.operations)
        return update

    AceMethod.curate = recording  # type: ignore[method-assign]
    recorder = Recorder()
    try:
        result = await combee.train_async(
            task, strategy=args.strategy, batch_size=args.batch, llm=llm, observers=[recorder],
            seed=args.seed, train_limit=args.train, val_limit=0, test_limit=args.test,
            max_tokens=args.max_tokens, screen=False, gate=False,
            **dict.fromkeys(REPAIRS, args.repairs == "on"),
        )  # fmt: skip
    finally:
        await llm.aclose()
    stages = {e.name: stage(e, recorder, curated, samples) for e in task.entities}
    return {
        "task": args.task,
        "strategy": args.strategy,
        "batch": args.batch,
        "repairs": args.repairs,
        "seed": args.seed,
        "test_accuracy": result.test_accuracy,
        "stages": stages,
        "counts": dict(Counter(stages.values())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--strategy", required=True)
    parser.add_argument("--batch", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--task", choices=("rules", "rules-unstated"), default="rules")
    parser.add_argument("--repairs", choices=("on", "off"), default="on")
    parser.add_argument("--context-window", type=int, default=None)
    parser.add_argument("--train", type=int, default=32)
    parser.add_argument("--test", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--model", default="local")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--cache", default="cells/cache.sqlite")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    found = asyncio.run(run(args))
    for name, where in found["stages"].items():
        print(f"{name:<12} {where}")
    counts = ", ".join(f"{k} {found['counts'].get(k, 0)}" for k in STAGES)
    cell = f"{args.task} {args.strategy} b{args.batch} seed {args.seed} repairs {args.repairs}"
    print(f"{cell}: {counts}")
    print(f"test accuracy {found['test_accuracy']}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(found, out, indent=2)


if __name__ == "__main__":
    main()
