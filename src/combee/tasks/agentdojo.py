"""AgentDojo (PyPI ``agentdojo``, MIT) as a live agent environment.

Each user task of an AgentDojo suite (``banking``, ``slack``, ``travel``, ``workspace``) is a
sample; its episode runs AgentDojo's own tool-calling loop (``AgentPipeline``,
``ToolsExecutionLoop``, ``ToolsExecutor``, ``FunctionsRuntime``) on a fresh copy of the suite's
environment, and AgentDojo's own check of the user task (``utility``) gives the reward.

The model step is ours: every LLM call goes through the run's client (counted, cached, retried
and bounded like the run's own calls) as one structured call with the schema
:data:`STEP_SCHEMA`: the model answers ``{"tool_calls": [{"name", "arguments"}], "answer"}``.
Combee's client sends text messages only (no native ``tools`` parameter), so the tools are
described in the system prompt and tool results come back as user messages; the episode itself
is recorded in OpenAI chat form with real ``tool_calls`` and ``tool`` messages.

agentdojo is an optional dependency (``pip install 'combee[agentdojo]'``); it is imported only
when a task is built or an episode is run.
"""

from __future__ import annotations

import importlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from combee.errors import ConfigError, InvalidReplyError
from combee.llm.types import JsonSchema, Message
from combee.tasks.agent import AgentTask, Episode, with_playbook
from combee.tasks.base import Sample

DEFAULT_VERSION = "v1.2.2"
"""The newest AgentDojo benchmark version of the pinned release (0.1.35)."""

INSTALL_HINT = "pip install 'combee[agentdojo]'"

STEP_SCHEMA_NAME = "agent_step"

STEP_SCHEMA = JsonSchema(
    name=STEP_SCHEMA_NAME,
    schema={
        "type": "object",
        "properties": {
            "tool_calls": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "arguments": {"type": "object"},
                    },
                    "required": ["name", "arguments"],
                },
            },
            "answer": {"type": "string"},
        },
        "required": ["tool_calls", "answer"],
    },
)
"""One step of the agent: the tool calls to make now, or none and the final answer."""

REPLY_FORMAT = (
    "Reply with one JSON object: "
    '{"tool_calls": [{"name": "<tool>", "arguments": {...}}], "answer": "..."}. '
    'To use tools, list the calls and leave "answer" empty; their results come back in the '
    "next message. When the task is done, list no tool calls and put your final reply to the "
    'user in "answer".'
)


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise ConfigError(
            f"the AgentDojo environment needs the agentdojo package ({error}); {INSTALL_HINT}"
        ) from None


def versions() -> list[str]:
    """AgentDojo's benchmark versions, oldest first."""
    registry = getattr(_module("agentdojo.task_suite.load_suites"), "_SUITES", {})
    return [v for v in registry if registry[v]]


def load_suite(suite: str, version: str = DEFAULT_VERSION) -> Any:
    """AgentDojo's ``TaskSuite`` ``suite`` of benchmark ``version``; a clear error otherwise."""
    known = versions()
    if version not in known:
        raise ConfigError(
            f"must be one of AgentDojo's benchmark versions {', '.join(known)} (got {version!r})",
            setting="version",
        )
    suites: Mapping[str, Any] = _module("agentdojo.task_suite.load_suites").get_suites(version)
    if suite not in suites:
        raise ConfigError(
            f"must be one of the AgentDojo {version} suites {', '.join(sorted(suites))} "
            f"(got {suite!r})",
            setting="suite",
        )
    return suites[suite]


def _task_number(task_id: str) -> tuple[int, str]:
    digits = re.search(r"(\d+)$", task_id)
    return (int(digits.group(1)) if digits else -1, task_id)


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """``name(a='x', b=1)``, the way AgentDojo writes a call."""
    args = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    return f"{name}({args})"


def agentdojo_samples(suite: str = "banking", version: str = DEFAULT_VERSION) -> list[Sample]:
    """One sample per user task, in task order. ``meta["ground_truth"]`` holds the task's
    reference calls (``[{"name", "arguments"}]``) on the suite's default environment."""
    task_suite = load_suite(suite, version)
    environment = task_suite.load_and_inject_default_environment({})
    samples = []
    for task_id, task in sorted(task_suite.user_tasks.items(), key=lambda i: _task_number(i[0])):
        task_environment = task.init_environment(environment.model_copy(deep=True))
        calls = [
            {"name": call.function, "arguments": _plain(dict(call.args))}
            for call in task.ground_truth(task_environment)
        ]
        samples.append(
            Sample(
                id=f"{suite}/{task_id}",
                question=str(task.PROMPT),
                answer=str(task.GROUND_TRUTH_OUTPUT),
                meta={
                    "task_id": task_id,
                    "suite": suite,
                    "version": version,
                    "difficulty": str(getattr(task.DIFFICULTY, "name", task.DIFFICULTY)),
                    "ground_truth": calls,
                },
            )
        )
    return samples


def agentdojo_task(
    suite: str = "banking",
    *,
    seed: int = 0,
    train: int | None = None,
    test: int | None = None,
    version: str = DEFAULT_VERSION,
    max_steps: int = 15,
    max_tokens: int = 2048,
    temperature: float = 0.0,
) -> AgentTask:
    """The user tasks of AgentDojo's ``suite`` as an :class:`AgentTask`, split at random by
    ``seed``: ``train`` and ``test`` tasks (default: half each; one given, the rest is the
    other). The agent is :class:`AgentDojoAgent`."""
    samples = agentdojo_samples(suite, version)
    total = len(samples)
    for name, value in (("train", train), ("test", test)):
        if value is not None and value < 0:
            raise ConfigError(f"must be at least 0 (got {value})", setting=name)
    if train is None and test is None:
        test = total // 2
    if train is None:
        train = total - (test or 0)
    if test is None:
        test = total - train
    if train + test > total:
        raise ConfigError(
            f"and test together ask for {train + test} tasks; the AgentDojo {version} suite "
            f"{suite!r} has {total}",
            setting="train",
        )
    order = list(samples)
    random.Random(seed).shuffle(order)
    agent = AgentDojoAgent(
        suite=suite,
        version=version,
        max_steps=max_steps,
        max_tokens=max_tokens,
        temperature=temperature,
    )
    return AgentTask(
        name=f"agentdojo-{suite}",
        agent=agent,
        train=order[:train],
        test=order[train : train + test],
    )


@cache
def _system_message() -> str:
    pipeline = _module("agentdojo.agent_pipeline.agent_pipeline")
    return str(pipeline.load_system_message(None))


def tools_section(tools: Sequence[Any]) -> str:
    """The tools as the model reads them: name, description and JSON parameters."""
    lines = ["Tools (call them by name, with JSON arguments):"]
    for tool in tools:
        schema = tool.parameters.model_json_schema()
        parameters = {
            "properties": {
                name: {k: v for k, v in spec.items() if k != "title"}
                for name, spec in (schema.get("properties") or {}).items()
            },
            "required": schema.get("required", []),
        }
        description = " ".join(str(tool.description).split())
        lines.append(f"- {tool.name}: {description}\n  parameters: {json.dumps(parameters)}")
    return "\n".join(lines)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(
        str(block.get("content", "")) for block in content if block.get("type") == "text"
    )


def _step_reply(message: Mapping[str, Any]) -> str:
    """An assistant message of the episode as the JSON step the model wrote."""
    calls = [
        {"name": c.function, "arguments": _plain(dict(c.args))}
        for c in message.get("tool_calls") or []
    ]
    return json.dumps({"tool_calls": calls, "answer": _text(message.get("content"))})


def _result_text(message: Mapping[str, Any]) -> str:
    call = message["tool_call"]
    head = f"Result of {call_text(call.function, call.args)}:"
    error = message.get("error")
    return f"{head}\nerror: {error}" if error else f"{head}\n{_text(message.get('content'))}"


def llm_messages(system: str, messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """AgentDojo's conversation as text messages for Combee's client: ``system`` first, each
    assistant step as its JSON reply, tool results (in a row) as one user message."""
    out: list[dict[str, str]] = [{"role": "system", "content": system}]
    for message in messages:
        role = message["role"]
        if role == "system":
            continue
        if role == "assistant":
            out.append({"role": "assistant", "content": _step_reply(message)})
        elif role == "tool":
            text = _result_text(message)
            if out[-1]["role"] == "user" and out[-1]["content"].startswith("Result of "):
                out[-1] = {"role": "user", "content": f"{out[-1]['content']}\n\n{text}"}
            else:
                out.append({"role": "user", "content": text})
        else:
            out.append({"role": "user", "content": _text(message.get("content"))})
    return list(out)


class CombeeStep:
    """An AgentDojo pipeline element (the LLM step): one structured call through Combee's
    client per step. ``llm`` is the blocking client a plain agent receives."""

    name = "combee"

    def __init__(
        self, llm: Any, playbook: str, *, max_tokens: int = 2048, temperature: float = 0.0
    ) -> None:
        self.llm = llm
        self.playbook = playbook
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.system = ""
        """The last system prompt sent (AgentDojo's, the tools, the reply format, the playbook)."""

    def query(
        self,
        query: str,
        runtime: Any,
        env: Any,
        messages: Sequence[Any],
        extra_args: dict[str, Any],
    ) -> tuple[str, Any, Any, list[Any], dict[str, Any]]:
        types = _module("agentdojo.types")
        runtime_module = _module("agentdojo.functions_runtime")
        base = _text(messages[0]["content"]) if messages and messages[0]["role"] == "system" else ""
        tools = list(runtime.functions.values())
        prompt = "\n\n".join(p for p in (base, tools_section(tools), REPLY_FORMAT) if p)
        self.system = with_playbook(prompt, self.playbook)
        try:
            value, _ = self.llm.complete_json(
                llm_messages(self.system, messages),
                role="agent",
                schema=STEP_SCHEMA,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
        except InvalidReplyError as error:  # this episode fails; the run goes on
            value = {"tool_calls": [], "answer": f"(no valid step: {error})"}
        made = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
        calls = [
            runtime_module.FunctionCall(
                function=str(call.get("name", "")),
                args=dict(call.get("arguments") or {}),
                id=f"call_{made + n}",
            )
            for n, call in enumerate(value.get("tool_calls") or [])
        ]
        reply = types.ChatAssistantMessage(
            role="assistant",
            content=[types.text_content_block_from_string(str(value.get("answer", "")))],
            tool_calls=calls or None,
        )
        return query, runtime, env, [*messages, reply], extra_args


def openai_messages(system: str, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """AgentDojo's conversation in OpenAI chat form (the system message as it was sent)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "system":
            out.append({"role": "system", "content": system or _text(message["content"])})
        elif role == "user":
            out.append({"role": "user", "content": _text(message["content"])})
        elif role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": _text(message["content"])}
            calls = message.get("tool_calls") or []
            if calls:
                entry["content"] = entry["content"] or None
                entry["tool_calls"] = [
                    {
                        "id": call.id or f"call_{n}",
                        "type": "function",
                        "function": {
                            "name": call.function,
                            "arguments": json.dumps(_plain(dict(call.args))),
                        },
                    }
                    for n, call in enumerate(calls)
                ]
            out.append(entry)
        elif role == "tool":
            error = message.get("error")
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.get("tool_call_id") or "",
                    "name": message["tool_call"].function,
                    "content": f"error: {error}" if error else _text(message["content"]),
                }
            )
    return out


def feedback_text(
    utility: bool,
    ground_truth: Sequence[Mapping[str, Any]],
    made: Sequence[Mapping[str, Any]],
    expected_answer: str,
    answer: str,
) -> str:
    """The verdict of AgentDojo's utility check, the reference calls beside the agent's."""
    verdict = (
        "utility: passed (AgentDojo's check of the user task found it done)"
        if utility
        else "utility: failed (AgentDojo's check of the user task found it not done)"
    )

    def listed(calls: Sequence[Mapping[str, Any]]) -> list[str]:
        return [f"  {call_text(c['name'], c['arguments'])}" for c in calls] or ["  (none)"]

    lines = [verdict, "reference calls (one way to do the task):", *listed(ground_truth)]
    lines += ["the agent's calls:", *listed(made)]
    if expected_answer.strip():
        lines.append(f"reference answer: {expected_answer.strip()}")
    lines.append(f"the agent's answer: {answer.strip() or '(empty)'}")
    return "\n".join(lines)


@dataclass(frozen=True)
class AgentDojoAgent:
    """The :class:`combee.tasks.agent.Agent` for AgentDojo user tasks: a plain function (it runs
    on a worker thread, AgentDojo's pipeline being synchronous)."""

    suite: str = "banking"
    version: str = DEFAULT_VERSION
    max_steps: int = 15
    max_tokens: int = 2048
    temperature: float = 0.0

    def __call__(self, sample: Sample, playbook: str, llm: Any) -> Episode:
        pipeline = _module("agentdojo.agent_pipeline.agent_pipeline")
        basic = _module("agentdojo.agent_pipeline.basic_elements")
        execution = _module("agentdojo.agent_pipeline.tool_execution")
        errors = _module("agentdojo.agent_pipeline.errors")
        runtime_module = _module("agentdojo.functions_runtime")
        task_suite = load_suite(self.suite, self.version)
        task_id = str(sample.meta.get("task_id", sample.id.rsplit("/", 1)[-1]))
        task = task_suite.get_user_task_by_id(task_id)
        environment = task.init_environment(task_suite.load_and_inject_default_environment({}))
        pre_environment = environment.model_copy(deep=True)
        ground_truth = [
            {"name": call.function, "arguments": _plain(dict(call.args))}
            for call in task.ground_truth(pre_environment.model_copy(deep=True))
        ]
        step = CombeeStep(llm, playbook, max_tokens=self.max_tokens, temperature=self.temperature)
        agent = pipeline.AgentPipeline(
            [
                basic.SystemMessage(_system_message()),
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
        answer = _text(messages[-1]["content"]) if messages[-1]["role"] == "assistant" else ""
        trace = [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]
        utility = task.utility_from_traces(answer, pre_environment, environment, trace)
        if utility is None:
            utility = task.utility(answer, pre_environment, environment)
        made = [{"name": c.function, "arguments": _plain(dict(c.args))} for c in trace]
        return Episode(
            messages=openai_messages(step.system, messages),
            reward=1.0 if utility else 0.0,
            success=bool(utility),
            feedback=feedback_text(
                bool(utility), ground_truth, made, str(task.GROUND_TRUTH_OUTPUT), answer
            ),
            meta={
                "suite": self.suite,
                "version": self.version,
                "task_id": task_id,
                "utility": bool(utility),
                "tool_calls": len(made),
            },
        )
