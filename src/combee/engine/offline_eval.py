"""``combee.evaluate_next_actions``: judge a trace-learned playbook without the environment.

At decision points of held-out traces the agent model names its next action, without and with
the playbook; both are scored against the reference action (see
:mod:`combee.tasks.traces.next_action`) and reported with n and a 95% interval, plus the paired
count of points the playbook turned right or wrong.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from combee.errors import CombeeError, ConfigError, LLMCallError
from combee.files import read_setting_file
from combee.runs import CONFIG_FILE, read_config
from combee.tasks.traces import Trace, load_traces
from combee.tasks.traces.next_action import (
    DecisionPoint,
    check_action,
    decision_points,
    next_action_messages,
    next_action_schema,
    tool_names,
    wilson_interval,
)

if TYPE_CHECKING:
    from combee.engine.resolve import LLMArg
    from combee.llm.client import LLM

logger = logging.getLogger(__name__)

CONDITIONS = ("without_playbook", "with_playbook")
TRANSCRIPT_TOKENS = 2500
"""The trajectory's share of each question, in tokens; longer prefixes are cut."""


@dataclass(frozen=True)
class Accuracy:
    """Correct answers out of ``n`` with a 95% Wilson interval."""

    correct: int
    n: int

    @property
    def rate(self) -> float:
        return self.correct / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.correct, self.n)

    def text(self) -> str:
        low, high = self.interval
        return f"{self.correct}/{self.n} = {self.rate:.0%} [{low:.0%}, {high:.0%}]"


@dataclass(frozen=True)
class PointResult:
    """One decision point: the reference and, per condition, the reply and its check."""

    point: str
    task_id: str
    reference: str
    expected: dict[str, Any]
    replies: dict[str, Any]
    tool: dict[str, bool]
    arguments: dict[str, bool]
    cuts: tuple[str, ...] = ()


@dataclass
class NextActionResult:
    """The evaluation: per condition, the tool accuracy and the tool-and-arguments accuracy."""

    tasks: list[str]
    points: list[PointResult]
    tool: dict[str, Accuracy]
    arguments: dict[str, Accuracy]
    paired: dict[str, int]
    """Points the playbook made right (``gained``) or wrong (``lost``), on tool and arguments."""
    seconds: float
    usage: dict[str, Any] = field(default_factory=dict)
    failed_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        def accuracy(a: Accuracy) -> dict[str, Any]:
            low, high = a.interval
            return {"correct": a.correct, "n": a.n, "rate": a.rate, "interval_95": [low, high]}

        return {
            "tasks": self.tasks,
            "n_points": len(self.points),
            "tool_accuracy": {c: accuracy(a) for c, a in self.tool.items()},
            "tool_and_arguments_accuracy": {c: accuracy(a) for c, a in self.arguments.items()},
            "paired": self.paired,
            "failed_calls": self.failed_calls,
            "seconds": round(self.seconds, 2),
            **self.usage,
        }

    def markdown(self) -> str:
        lines = [
            f"Decision points: {len(self.points)} in {len(self.tasks)} held-out task(s); "
            f"failed calls: {self.failed_calls}; {self.seconds:.1f} s.",
            "",
            "| condition | tool right | tool and arguments right |",
            "| --- | --- | --- |",
        ]
        for condition in CONDITIONS:
            lines.append(
                f"| {condition.replace('_', ' ')} | {self.tool[condition].text()} | "
                f"{self.arguments[condition].text()} |"
            )
        lines += [
            "",
            "Paired (same points, tool and arguments): the playbook turned "
            f"{self.paired['gained']} wrong answer(s) right and {self.paired['lost']} right "
            "one(s) wrong.",
        ]
        return "\n".join(lines) + "\n"


async def evaluate_next_actions_async(
    traces: Iterable[str | os.PathLike[str]] | Sequence[Trace],
    *,
    playbook: str | os.PathLike[str],
    llm: LLMArg = None,
    tasks: Sequence[str] | None = None,
    points_per_task: int = 3,
    format: str = "auto",
    transcript_tokens: int = TRANSCRIPT_TOKENS,
    max_tokens: int = 512,
    parallel_traces: int | None = None,
    out: str | os.PathLike[str] | None = None,
    on_point: Callable[[PointResult, int, int], None] | None = None,
    seed: int = 0,
) -> NextActionResult:
    """Next-action accuracy without and with ``playbook`` (its text, or a path to it) at up to
    ``points_per_task`` decision points of each task id in ``tasks`` (default: all of them).

    ``traces``: trace files or folders, or loaded :class:`Trace` objects. ``parallel_traces``:
    traces evaluated at once (None: one for the embedded model, whose prefix cache then reads
    each trajectory once, all otherwise). ``out``: a folder for ``next_action.json``, ``.md``
    and ``next_action_points.jsonl``. ``on_point(result, done, total)``: called as each decision
    point is scored (progress).
    """
    loaded = _traces(traces, format)
    text = _playbook_text(playbook)
    if points_per_task < 1:
        raise ConfigError(f"must be at least 1 (got {points_per_task})", setting="points_per_task")
    known = {t.task_id for t in loaded}
    unknown = [t for t in tasks or () if t not in known]
    if unknown:
        raise ConfigError(
            f"names task ids the traces do not hold: {', '.join(unknown[:5])}", setting="tasks"
        )
    points = decision_points(loaded, tasks=tasks, points_per_task=points_per_task, seed=seed)
    if not points:
        raise ConfigError(
            "give no decision point: the chosen tasks have no successful trace and no gold "
            "actions to compare a next action with",
            setting="tasks",
        )
    tools = tool_names(loaded)
    # The client's machinery is imported here: the command line reads this module's defaults.
    from combee.engine.resolve import llm_of
    from combee.engine.results import usage_summary

    client, owned = llm_of(llm, seed=seed)
    try:
        started = time.perf_counter()
        lanes = parallel_traces or (1 if client.model.startswith("local") else len(points))
        results = await _run_points(
            client, points, tools, text, transcript_tokens, max_tokens, lanes, on_point
        )
        failed = sum(1 for r in results for c in CONDITIONS if r.replies[c] is None)
        if failed == 2 * len(results):
            raise LLMCallError(
                f"{client.model}: every next-action call failed; nothing was measured "
                "(see the log for the errors)"
            )
        result = _summarise(
            sorted({p.trace.task_id for p in points}),
            results,
            time.perf_counter() - started,
            usage_summary(client.usage()),
            failed,
        )
    finally:
        if owned:
            await client.aclose()
    if out is not None:
        _write(Path(out), result)
    return result


def evaluate_next_actions(
    traces: Iterable[str | os.PathLike[str]] | Sequence[Trace], **settings: Any
) -> NextActionResult:
    """:func:`evaluate_next_actions_async` for synchronous callers."""
    from combee.sync import run_sync

    return run_sync(
        evaluate_next_actions_async(traces, **settings),
        async_name="combee.evaluate_next_actions_async",
    )


def learned_run_settings(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The traces, format, held-out tasks, playbook and endpoint (``llm``: its model, address
    and the other fields ``config.json`` recorded; never a key, which is read from the
    environment as the run read it) of a ``combee learn`` run directory, as settings of
    :func:`evaluate_next_actions_async`."""
    from combee.engine.resume import saved_endpoint  # the run engine; not for the command's help

    folder = Path(run_dir)
    config_path = folder / CONFIG_FILE
    config = read_config(folder, setting="run")
    held = config.get("held_out_tasks")
    if not isinstance(held, list) or not held:
        raise ConfigError(
            f"{config_path} names no held-out tasks: learn with --holdout-tasks N to keep "
            "tasks out for this evaluation, or name the tasks yourself",
            setting="run",
        )
    playbook = folder / "playbook.txt"
    if not playbook.is_file():
        raise ConfigError(f"{playbook} does not exist: the run has not finished", setting="run")
    return {
        "traces": config.get("traces", []),
        "format": config.get("format", "auto"),
        "tasks": [str(t) for t in held],
        "playbook": playbook,
        "llm": saved_endpoint(folder, cache=None),  # the run's cache holds other prompts
    }


def _traces(traces: Iterable[Any], format: str) -> list[Trace]:
    given = list(traces)
    if given and all(isinstance(t, Trace) for t in given):
        return given
    return load_traces([os.fspath(t) for t in given], format=format)


def _playbook_text(playbook: str | os.PathLike[str]) -> str:
    if isinstance(playbook, os.PathLike):
        return read_setting_file(playbook, "playbook")
    return playbook


async def _run_points(
    client: LLM,
    points: Sequence[DecisionPoint],
    tools: Sequence[str],
    playbook: str,
    transcript_tokens: int,
    max_tokens: int,
    lanes: int,
    on_point: Callable[[PointResult, int, int], None] | None,
) -> list[PointResult]:
    """Each trace's points in order, each point without then with the playbook, ``lanes``
    traces at a time."""
    import asyncio  # loaded already (this runs in its event loop); not for the command's help

    from combee.core.executor import all_or_none

    by_trace: dict[str, list[DecisionPoint]] = {}
    for point in points:
        by_trace.setdefault(point.trace.id, []).append(point)
    gate = asyncio.Semaphore(max(1, lanes))
    schema = next_action_schema(tools)
    finished = 0

    async def one_trace(group: list[DecisionPoint]) -> list[PointResult]:
        nonlocal finished
        async with gate:
            done = []
            for point in group:
                result = await _one_point(
                    client, point, tools, playbook, schema, transcript_tokens, max_tokens
                )
                done.append(result)
                finished += 1
                if on_point is not None:
                    on_point(result, finished, len(points))
            return done

    groups = await all_or_none(one_trace(g) for g in by_trace.values())
    return [result for group in groups for result in group]


async def _one_point(
    client: LLM,
    point: DecisionPoint,
    tools: Sequence[str],
    playbook: str,
    schema: Any,
    transcript_tokens: int,
    max_tokens: int,
) -> PointResult:
    replies: dict[str, Any] = {}
    tool: dict[str, bool] = {}
    arguments: dict[str, bool] = {}
    cuts: tuple[str, ...] = ()
    for condition in CONDITIONS:
        messages, cuts = next_action_messages(
            point,
            tools=tools,
            playbook=playbook if condition == "with_playbook" else None,
            transcript_tokens=transcript_tokens,
        )
        try:
            reply, _ = await client.complete_json(
                messages, role="next_action", schema=schema, max_tokens=max_tokens
            )
        except CombeeError as error:
            logger.warning("%s (%s): the call failed: %s", point.id, condition, error)
            reply = None
        check = check_action(reply or {}, point.expected)
        replies[condition], tool[condition], arguments[condition] = (
            reply,
            check.tool,
            check.arguments,
        )
    return PointResult(
        point=point.id,
        task_id=point.trace.task_id,
        reference=point.reference,
        expected={"name": point.expected.name, "arguments": point.expected.arguments},
        replies=replies,
        tool=tool,
        arguments=arguments,
        cuts=cuts,
    )


def _summarise(
    tasks: list[str],
    results: list[PointResult],
    seconds: float,
    usage: Mapping[str, Any],
    failed: int,
) -> NextActionResult:
    def accuracy(kind: str, condition: str) -> Accuracy:
        right = sum(getattr(r, kind)[condition] for r in results)
        return Accuracy(int(right), len(results))

    gained = sum(
        r.arguments["with_playbook"] and not r.arguments["without_playbook"] for r in results
    )
    lost = sum(
        r.arguments["without_playbook"] and not r.arguments["with_playbook"] for r in results
    )
    return NextActionResult(
        tasks=tasks,
        points=results,
        tool={c: accuracy("tool", c) for c in CONDITIONS},
        arguments={c: accuracy("arguments", c) for c in CONDITIONS},
        paired={"gained": gained, "lost": lost},
        seconds=seconds,
        usage=dict(usage),
        failed_calls=failed,
    )


def _write(folder: Path, result: NextActionResult) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "next_action.json").write_text(
            json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8"
        )
        (folder / "next_action.md").write_text(result.markdown(), encoding="utf-8")
        with (folder / "next_action_points.jsonl").open("w", encoding="utf-8") as handle:
            for point in result.points:
                handle.write(json.dumps(asdict(point), default=str) + "\n")
    except OSError as error:
        raise ConfigError(
            f"cannot write the evaluation to {folder}: {error}", setting="out"
        ) from None
