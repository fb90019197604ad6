"""The JSON model step of an AgentDojo episode (``steps="json"``), for an endpoint without
native tool calls: one structured call through Combee's client.

Every LLM call of the agent goes through the run's client (counted, cached, retried and
bounded like the run's own calls) as one structured call with the schema :data:`STEP_SCHEMA`:
the model answers ``{"tool_calls": [{"name", "arguments"}], "answer"}``. The tools are described
in the system prompt and tool results come back as user messages, so any endpoint with JSON
output can play the agent; the episode itself is recorded in OpenAI chat form with real
``tool_calls`` and ``tool`` messages (:func:`.native_step.openai_messages`). The default step
is native (:mod:`.native_step`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from combee.errors import InvalidReplyError, InvalidStepError
from combee.llm.types import DEFAULT_MAX_TOKENS, JsonSchema, Message
from combee.tasks.agent import with_playbook
from combee.tasks.agentdojo.environment import call_text, module, plain

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


@cache
def system_message() -> str:
    pipeline = module("agentdojo.agent_pipeline.agent_pipeline")
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


def text_of(content: Any) -> str:
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
        {"name": c.function, "arguments": plain(dict(c.args))}
        for c in message.get("tool_calls") or []
    ]
    return json.dumps({"tool_calls": calls, "answer": text_of(message.get("content"))})


def _result_text(message: Mapping[str, Any]) -> str:
    call = message["tool_call"]
    head = f"Result of {call_text(call.function, call.args)}:"
    error = message.get("error")
    return f"{head}\nerror: {error}" if error else f"{head}\n{text_of(message.get('content'))}"


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
            out.append({"role": "user", "content": text_of(message.get("content"))})
    return list(out)


class ModelStep:
    """What both model steps hold: the blocking client a plain agent receives (``llm``), the
    playbook, the call's settings, and the repeat-stop with its count."""

    def __init__(
        self,
        llm: Any,
        playbook: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = 0.0,
        repeat_stop: int | None = None,
    ) -> None:
        self.llm = llm
        self.playbook = playbook
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.repeat_stop = repeat_stop
        self.system = ""
        """The last system prompt sent (with the playbook)."""
        self.repeats = 0
        """Steps that repeated the previous steps' calls (each ended its episode)."""


class CombeeStep(ModelStep):
    """An AgentDojo pipeline element (the LLM step): one structured call through Combee's
    client per step, the tools described in the system prompt."""

    name = "combee"

    def query(
        self,
        query: str,
        runtime: Any,
        env: Any,
        messages: Sequence[Any],
        extra_args: dict[str, Any],
    ) -> tuple[str, Any, Any, list[Any], dict[str, Any]]:
        types = module("agentdojo.types")
        runtime_module = module("agentdojo.functions_runtime")
        base = (
            text_of(messages[0]["content"]) if messages and messages[0]["role"] == "system" else ""
        )
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
        except InvalidReplyError as error:  # this sample fails as an invalid step
            raise InvalidStepError(f"the agent's step never parsed: {error}") from None
        made = sum(len(m.get("tool_calls") or []) for m in messages if m["role"] == "assistant")
        calls = [
            runtime_module.FunctionCall(
                function=str(call.get("name", "")),
                args=dict(call.get("arguments") or {}),
                id=f"call_{made + n}",
            )
            for n, call in enumerate(value.get("tool_calls") or [])
        ]
        if calls and repeated_calls(messages, calls, self.repeat_stop):
            self.repeats += 1
            calls = []
        reply = types.ChatAssistantMessage(
            role="assistant",
            content=[types.text_content_block_from_string(str(value.get("answer", "")))],
            tool_calls=calls or None,
        )
        return query, runtime, env, [*messages, reply], extra_args


def repeated_calls(
    messages: Sequence[Mapping[str, Any]], calls: Sequence[Any], repeat_stop: int | None
) -> bool:
    """Whether ``calls`` (AgentDojo function calls) repeat the calls of each of the latest
    ``repeat_stop`` steps, each already answered: a small model's loop, which the step ends
    with its text instead of spending every step left (None: never; AgentDojo's own loop runs
    to its step limit)."""
    if not repeat_stop:
        return False
    wanted = [_call_key(call) for call in calls]
    found: list[list[str]] = []
    for message in reversed(messages):
        if message["role"] == "assistant" and len(found) < repeat_stop:
            found.append([_call_key(c) for c in message.get("tool_calls") or []])
    return found == [wanted] * repeat_stop


def _call_key(call: Any) -> str:
    return json.dumps([call.function, plain(dict(call.args))], sort_keys=True, default=str)
