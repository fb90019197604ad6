"""The model step of an AgentDojo episode on the endpoint's native tool calls.

AgentDojo's conversation goes to the model as OpenAI chat messages (the system prompt with the
playbook, the task, assistant ``tool_calls``, ``tool`` results) with the suite's tools as
``tools``; the model's ``tool_calls`` become AgentDojo's function calls. This is what AgentDojo's
own OpenAI element sends, through Combee's client (counted, cached, retried, bounded).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from combee.errors import InvalidStepError
from combee.tasks.agent import with_playbook
from combee.tasks.agentdojo.environment import module, plain
from combee.tasks.agentdojo.step import ModelStep, repeated_calls, text_of


def openai_tools(functions: Sequence[Any]) -> list[dict[str, Any]]:
    """The suite's tools as the OpenAI chat API's ``tools``."""
    return [
        {
            "type": "function",
            "function": {
                "name": function.name,
                "description": str(function.description),
                "parameters": function.parameters.model_json_schema(),
            },
        }
        for function in functions
    ]


def chat_message(message: Mapping[str, Any], system: str) -> dict[str, Any]:
    """One AgentDojo message as an OpenAI chat message (``system`` replaces the system text)."""
    role = message["role"]
    if role == "system":
        return {"role": "system", "content": system}
    if role == "user":
        return {"role": "user", "content": text_of(message["content"])}
    if role == "tool":
        error = message.get("error")
        return {
            "role": "tool",
            "tool_call_id": str(message.get("tool_call_id") or ""),
            "name": message["tool_call"].function,
            "content": error if error else text_of(message["content"]),
        }
    calls = message.get("tool_calls") or []
    content = text_of(message.get("content"))
    if not calls:
        return {"role": "assistant", "content": content}
    return {
        "role": "assistant",
        "content": content or None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.function,
                    "arguments": json.dumps(plain(dict(call.args))),
                },
            }
            for call in calls
        ],
    }


def openai_messages(system: str, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """AgentDojo's conversation in OpenAI chat form (the system message as it was sent)."""
    return [chat_message(message, system or text_of(message["content"])) for message in messages]


class NativeStep(ModelStep):
    """An AgentDojo pipeline element (the LLM step): one call with the suite's tools per step."""

    name = "combee-tools"

    _tools: list[dict[str, Any]] | None = None

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
        base = text_of(messages[0]["content"]) if messages[0]["role"] == "system" else ""
        self.system = with_playbook(base, self.playbook)
        if self._tools is None:
            self._tools = openai_tools(list(runtime.functions.values()))
        completion = self.llm.complete(
            [chat_message(m, self.system) for m in messages],
            role="agent",
            tools=self._tools,
            tool_choice="auto",
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        calls = [
            runtime_module.FunctionCall(
                function=call["function"]["name"],
                args=_arguments(call["function"]),
                id=call["id"],
            )
            for call in completion.tool_calls
        ]
        text = completion.text
        if calls and repeated_calls(messages, calls, self.repeat_stop):
            self.repeats += 1  # a small model's loop: the step ends the episode with its text
            calls = []
        reply = types.ChatAssistantMessage(
            role="assistant",
            content=[types.text_content_block_from_string(text)] if text or not calls else None,
            tool_calls=calls or None,
        )
        return query, runtime, env, [*messages, reply], extra_args


def _arguments(function: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as AgentDojo takes them; an :class:`InvalidStepError` when they
    are not a JSON object."""
    try:
        value = json.loads(function["arguments"] or "{}")
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise InvalidStepError(
            f"the model's call to {function['name']} has arguments that are not a JSON object: "
            f"{str(function['arguments'])[:200]!r}"
        )
    return value
