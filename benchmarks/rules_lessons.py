"""Do the reflections of one batch state the rule the feedback gave? Counted on the `rules` task.

One batch of the `rules` task's training questions (16 by default: one per entity, on an empty
playbook) is answered and reflected on exactly as the first iteration of `combee train --task
rules` does it. For each reflection the script shows the reflector's own key insight and the
lesson after grounding (:mod:`combee.methods.ace.grounding`), and counts the lessons that state
their entity's rule: the rule's value (factor, unit size, fee, code, start year or threshold)
together with the entity's name, its unit's name or its code. A reflection that only remarks on
the playbook states nothing; the reflector says itself what each key insight is about
(``key_insight_about``: the task, the playbook or the attempt), and the script shows it.

    python benchmarks/rules_lessons.py [--model local] [--base-url URL] [--batch 16]
        [--task rules|rules-unstated] [--max-tokens 1024] [--cache runs/rules/cache.sqlite]
        [--json out.json]

With the same ``--cache`` as the quality grid, its calls are replayed by the grid and back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from pathlib import Path

from combee.llm.connect import connect
from combee.methods.ace import prompts, schemas
from combee.methods.ace.grounding import ground, is_remark
from combee.methods.ace.method import AceMethod
from combee.methods.ace.playbook import Playbook
from combee.methods.ace.schemas import INSIGHT_ABOUT
from combee.methods.ace.settings import AceSettings
from combee.tasks.rules import RulesTask

_CODE = re.compile(r"followed by ([A-Z]{3})")
_NUMBER = re.compile(r"\d+")


def rule_terms(entity_name: str, kind: str, rule: str) -> tuple[str, list[str]]:
    """The rule's value, and the names any one of which ties a lesson to the entity."""
    names = [entity_name.lower()]
    if kind == "code":
        code = _CODE.search(rule)
        value = code[1] if code else ""
        names.append(value.lower())
    else:
        numbers = _NUMBER.findall(rule)
        value = numbers[-1] if kind == "unit" else numbers[0]
        if kind == "unit":
            names.append(entity_name.lower()[:3] + "span")
    return value.lower(), names


def states_rule(text: str, entity_name: str, kind: str, rule: str) -> bool:
    value, names = rule_terms(entity_name, kind, rule)
    folded = text.lower()
    if not re.search(rf"(?<![\w]){re.escape(value)}(?![\w])", folded):
        return False
    return any(name in folded for name in names)


async def run(args: argparse.Namespace) -> dict[str, object]:
    task = RulesTask(state_rule=args.task == "rules")
    samples = task.load().train[: args.batch]
    llm = connect(args.model, base_url=args.base_url, cache=args.cache, seed=args.seed)
    method = AceMethod(llm, task.score, ace=AceSettings(screen=False), max_tokens=args.max_tokens)
    playbook = Playbook()
    started = time.perf_counter()
    try:
        trajectories = await asyncio.gather(*(method.rollout(playbook, s) for s in samples))
        replies = await asyncio.gather(
            *(
                llm.complete_json(
                    prompts.reflector_messages(playbook, t),
                    role="reflector",
                    schema=schemas.REFLECTOR,
                    temperature=method.temperature,
                    max_tokens=method.max_tokens,
                )
                for t in trajectories
            )
        )
    finally:
        await llm.aclose()
    rows = []
    for trajectory, (reply, _) in zip(trajectories, replies, strict=True):
        meta = trajectory.sample.meta
        name, kind, rule = str(meta["entity"]), str(meta["kind"]), str(meta["rule"])
        raw = str(reply.get("key_insight", ""))
        grounded = ground(reply, trajectory.score.feedback)
        lesson = str(grounded.fields.get("key_insight", ""))
        rows.append(
            {
                "sample": trajectory.sample.id,
                "correct": trajectory.score.correct,
                "rule": rule,
                "key_insight": raw,
                "key_insight_states_rule": states_rule(raw, name, kind, rule),
                "key_insight_about": str(reply.get(INSIGHT_ABOUT, "")),
                "key_insight_is_remark": is_remark(reply),
                "lesson": lesson,
                "lesson_states_rule": states_rule(lesson, name, kind, rule),
                "source": grounded.source,
            }
        )
    seconds = round(time.perf_counter() - started, 1)
    return {"model": args.model, "task": args.task, "seconds": seconds, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--task", choices=("rules", "rules-unstated"), default="rules")
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cache", default="runs/rules/cache.sqlite")
    parser.add_argument("--json", type=Path, default=None, help="write every row here")
    args = parser.parse_args()
    Path(args.cache).parent.mkdir(parents=True, exist_ok=True)
    result = asyncio.run(run(args))
    rows = result["rows"]
    assert isinstance(rows, list)
    for row in rows:
        verdict = "correct" if row["correct"] else "wrong"
        about = row["key_insight_about"]
        print(f"{row['sample']} ({verdict}), about {about}, source {row['source']}")
        print(f"  key insight: {row['key_insight']}")
        if row["lesson"] != row["key_insight"]:
            print(f"  lesson:      {row['lesson']}")
    n = len(rows)
    raw = sum(r["key_insight_states_rule"] for r in rows)
    remarks = sum(r["key_insight_is_remark"] for r in rows)
    lessons = sum(r["lesson_states_rule"] for r in rows)
    sources: dict[str, int] = {}
    for r in rows:
        sources[r["source"]] = sources.get(r["source"], 0) + 1
    print(
        f"\n{args.model}, {n} reflections, {result['seconds']} s: key insights stating their "
        f"rule {raw}/{n} (remarks {remarks}/{n}); lessons stating their rule {lessons}/{n}; "
        f"lesson sources {sources}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
