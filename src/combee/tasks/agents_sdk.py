"""An OpenAI Agents SDK run (``openai-agents``) as a Combee :class:`~combee.tasks.agent.Episode`.

``Runner.run`` (or ``Runner.run_sync``) returns a ``RunResult`` whose items are the Responses
API's (``function_call``, ``function_call_output``, output ``message``, ``reasoning``), whichever
model ran: the chat-completions model (``OpenAIChatCompletionsModel`` on
:func:`combee.llm.openai_compat.async_openai`) converts its replies to them, the default
Responses model returns them as they are. The SDK sends the agent's instructions outside these
items (a system message, or the Responses API's ``instructions``), so an episode needs them
put back as its system prompt. :func:`episode_from_agents_run` does both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from combee.errors import ConfigError
from combee.tasks.agent import Episode

if TYPE_CHECKING:
    from agents.result import RunResultBase


def episode_from_agents_run(
    result: RunResultBase,
    *,
    instructions: str | None = None,
    reward: float | None = None,
    success: bool | None = None,
    feedback: str = "",
    meta: Mapping[str, Any] | None = None,
) -> Episode:
    """The episode of ``result`` in OpenAI chat messages: the system prompt, the run's input,
    each model turn (``tool_calls`` included), each tool's output (``tool`` messages) and the
    final answer, as the SDK's chat-completions model would send them (reasoning items are left
    out, as it leaves them out). ``reward``, ``success``, ``feedback`` and ``meta`` are the
    episode's, as for :class:`~combee.tasks.agent.Episode`.

    ``instructions``: the system prompt the episode starts with (with the playbook, when the
    agent put it there); by default the instructions of the agent that answered last
    (``result.last_agent``). Pass them when they are a function of the run's context, or when
    a handoff changed agents and the first one's should open the episode."""
    try:
        from agents.models.chatcmpl_converter import Converter
    except ImportError:
        raise ConfigError(
            "episode_from_agents_run needs the OpenAI Agents SDK: pip install 'combee[agents]'",
            setting="agents",
        ) from None
    system = _instructions(result) if instructions is None else instructions
    opening = [{"role": "system", "content": system}] if system else []
    conversation = Converter.items_to_messages(result.to_input_list())
    return Episode(
        messages=[*opening, *conversation],
        reward=reward,
        success=success,
        feedback=feedback,
        meta=dict(meta or {}),
    )


def _instructions(result: RunResultBase) -> str | None:
    """The last agent's instructions, when they are text; else a :class:`ConfigError`."""
    given = result.last_agent.instructions
    if given is None or isinstance(given, str):
        return given
    raise ConfigError(
        f"the instructions of agent {result.last_agent.name!r} are a function, not text: pass "
        "episode_from_agents_run(result, instructions=...) the system prompt they gave",
        setting="instructions",
    )
