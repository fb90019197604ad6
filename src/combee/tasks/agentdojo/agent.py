"""The agent of AgentDojo user tasks: AgentDojo's own tool loop around Combee's model step,
rewarded by the task's utility check, judged as AgentDojo's ``run_task_with_pipeline`` judges.

Feedback modes (what the reflector reads of the checker, as the ACE paper reports both):
``verdict`` (the default; what a deployment has) is the utility verdict alone; ``reference``
adds the task's reference calls and reference answer, computed on the clean environment (never
on one an attack wrote into), so nothing the attacker planted reaches the trusted feedback."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from combee.errors import ConfigError
from combee.llm.types import DEFAULT_MAX_TOKENS
from combee.tasks.agent import Episode
from combee.tasks.agentdojo.attacks import attack_succeeded
from combee.tasks.agentdojo.environment import DEFAULT_VERSION, call_text, load_suite, module, plain
from combee.tasks.agentdojo.native_step import NativeStep, openai_messages
from combee.tasks.agentdojo.step import CombeeStep, system_message, text_of
from combee.tasks.base import Sample

FEEDBACK_MODES = ("verdict", "reference")
STEP_MODES = ("native", "json")


def feedback_text(
    utility: bool,
    ground_truth: Sequence[Mapping[str, Any]] | None = None,
    expected_answer: str = "",
) -> str:
    """The verdict of AgentDojo's utility check; with ``ground_truth`` (the ``reference``
    mode) the task's reference calls and answer on the clean environment after it. The agent's
    own calls and answer are in the episode, where they are read as what the agent did."""
    verdict = (
        "utility: passed (AgentDojo's check of the user task found it done)"
        if utility
        else "utility: failed (AgentDojo's check of the user task found it not done)"
    )
    if ground_truth is None:
        return verdict
    calls = [f"  {call_text(c['name'], c['arguments'])}" for c in ground_truth] or ["  (none)"]
    lines = [verdict, "reference calls (one way to do the task, on its own data):", *calls]
    if expected_answer.strip():
        lines.append(f"reference answer: {expected_answer.strip()}")
    return "\n".join(lines)


@dataclass(frozen=True)
class AgentDojoAgent:
    """The :class:`combee.tasks.agent.Agent` for AgentDojo user tasks: a plain function (it runs
    on a worker thread, AgentDojo's pipeline being synchronous). A sample's ``meta["suite"]``
    and ``meta["version"]``, when present, take precedence over ``suite`` and ``version``; its
    ``meta["injections"]`` (an attack's planted texts) are written into the environment.

    ``steps``: ``native`` (the endpoint's tool calls, :mod:`.native_step`) or ``json`` (one
    JSON-schema reply per step, :mod:`.step`). ``feedback``: ``verdict`` or ``reference`` (see
    the module). ``repeat_stop``: a step that asks for the same calls as each of the previous
    this many steps ends the episode (None: never, as AgentDojo's own loop)."""

    suite: str = "banking"
    version: str = DEFAULT_VERSION
    max_steps: int = 15
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = 0.0
    steps: str = "native"
    feedback: str = "verdict"
    repeat_stop: int | None = 2

    def __post_init__(self) -> None:
        for name, value, known in (
            ("agent_steps", self.steps, STEP_MODES),
            ("feedback", self.feedback, FEEDBACK_MODES),
        ):
            if value not in known:
                raise ConfigError(
                    f"must be one of {', '.join(known)} (got {value!r})", setting=name
                )

    def __call__(self, sample: Sample, playbook: str, llm: Any) -> Episode:
        pipeline = module("agentdojo.agent_pipeline.agent_pipeline")
        basic = module("agentdojo.agent_pipeline.basic_elements")
        execution = module("agentdojo.agent_pipeline.tool_execution")
        errors = module("agentdojo.agent_pipeline.errors")
        runtime_module = module("agentdojo.functions_runtime")
        suite = str(sample.meta.get("suite", self.suite))
        version = str(sample.meta.get("version", self.version))
        task_suite = load_suite(suite, version)
        task_id = str(sample.meta.get("task_id", sample.id.rsplit("/", 1)[-1]))
        task = task_suite.get_user_task_by_id(task_id)
        injections: Mapping[str, str] = sample.meta.get("injections") or {}
        environment = task.init_environment(
            task_suite.load_and_inject_default_environment(dict(injections))
        )
        pre_environment = environment.model_copy(deep=True)
        kind = NativeStep if self.steps == "native" else CombeeStep
        step = kind(
            llm,
            playbook,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            repeat_stop=self.repeat_stop,
        )
        agent = pipeline.AgentPipeline(
            [
                basic.SystemMessage(system_message()),
                basic.InitQuery(),
                step,
                execution.ToolsExecutionLoop(
                    [execution.ToolsExecutor(), step], max_iters=self.max_steps
                ),
            ]
        )
        runtime = runtime_module.FunctionsRuntime(task_suite.tools)
        try:
            _, _, environment, messages, _ = agent.query(task.PROMPT, runtime, environment)
        except errors.AbortAgentError as error:
            environment, messages = error.task_environment, error.messages
        messages = list(messages)
        answer = text_of(messages[-1]["content"]) if messages[-1]["role"] == "assistant" else ""
        trace = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        utility = task.utility_from_traces(answer, pre_environment, environment, trace)
        if utility is None:
            utility = task.utility(answer, pre_environment, environment)
        meta: dict[str, Any] = {
            "suite": suite,
            "version": version,
            "task_id": task_id,
            "utility": bool(utility),
            "tool_calls": len(trace),
            "steps": self.steps,
            "repeated_calls_ended_it": step.repeats > 0,
        }
        if injections:
            injection_task = str(sample.meta["injection_task"])
            meta |= {
                "attack": sample.meta.get("attack"),
                "injection_task": injection_task,
                "attack_succeeded": attack_succeeded(
                    suite, version, injection_task, answer, pre_environment, environment, trace
                ),
                "planted": sorted(set(injections.values())),
            }
        return Episode(
            messages=openai_messages(step.system, messages),
            reward=1.0 if utility else 0.0,
            success=bool(utility),
            feedback=feedback_text(bool(utility))
            if self.feedback == "verdict"
            else feedback_text(
                bool(utility), clean_ground_truth(task_suite, task), str(task.GROUND_TRUTH_OUTPUT)
            ),
            meta=meta,
        )


def clean_ground_truth(task_suite: Any, task: Any) -> list[dict[str, Any]]:
    """The task's reference calls on the suite's default environment, with nothing planted."""
    environment = task.init_environment(task_suite.load_and_inject_default_environment({}))
    return [
        {"name": call.function, "arguments": plain(dict(call.args))}
        for call in task.ground_truth(environment)
    ]
