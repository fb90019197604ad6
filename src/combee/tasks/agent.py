"""Live agents as a task: each sample is a task instance, and its rollout is an episode.

An :class:`Agent` is any function ``agent(sample, playbook, llm)`` (plain or async; a plain one
runs off the event loop) that acts in its environment with the run's LLM client and returns an
:class:`Episode`: the conversation as OpenAI chat messages (tool calls and tool results
included), a reward in [0, 1] and/or a success flag, and the environment checker's feedback.
Reflection on an episode is reflection on a recorded trace (the same prompts and the same cut of
long conversations), so every strategy, the batch size controller, the executors and the run
directory apply unchanged.

Where the playbook goes: the agent receives it as text, already introduced by
:func:`playbook_section`; the documented default is to append it to the agent's system prompt
with :func:`with_playbook`. A task overrides the introduction with ``playbook_text``; an agent
may place the text anywhere it likes.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from combee.errors import (
    CombeeError,
    ConfigError,
    InvalidReplyError,
    InvalidStepError,
    SampleError,
)
from combee.llm.model_objects import plain_value
from combee.llm.placeholders import Placeholders
from combee.llm.types import DEFAULT_MAX_TOKENS, ChatModel, Completion, JsonSchema, Message
from combee.tasks.base import Sample, Score, Splits
from combee.tasks.episode_llm import for_episode
from combee.tasks.traces.chat import MessageError, chat_messages
from combee.tasks.traces.model import Outcome, Trace

if TYPE_CHECKING:
    from combee.llm.openai_compat import AsyncChat, Chat

T = TypeVar("T")

log = logging.getLogger(__name__)

MAX_THREADS = 256
"""At most this many plain-function episodes run at once (``AgentTask.max_threads``)."""

PLAYBOOK_HEADER = (
    "Playbook: lessons learned from earlier attempts at tasks like this one. "
    "Apply the ones that fit."
)


@dataclass(frozen=True)
class Episode:
    """What one run of an agent on one task instance did and how it ended."""

    messages: Sequence[Mapping[str, Any]]
    """OpenAI chat messages: ``role``, ``content``, an assistant's ``tool_calls``
    (``[{"id", "type": "function", "function": {"name", "arguments"}}]``), a tool result's
    ``tool_call_id``. The ``openai`` SDK's message objects (``reply.choices[0].message``
    appended as it came) are taken too, and held as the dicts they stand for."""
    reward: float | None = None
    """In [0, 1]; None when the environment gives only ``success``."""
    success: bool | None = None
    """None: a reward of 1 counts as a success."""
    feedback: str = ""
    """The environment checker's verdict: what was expected, what went wrong."""
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", [plain_value(m) for m in self.messages])

    @property
    def succeeded(self) -> bool:
        if self.success is not None:
            return self.success
        return self.reward is not None and self.reward >= 1.0

    @property
    def value(self) -> float:
        """The reward, or 1.0/0.0 from the success flag when there is no reward."""
        return float(self.reward) if self.reward is not None else float(self.succeeded)


class AgentLLM(ChatModel, Protocol):
    """The run's LLM client as an agent sees it: structured calls (``complete_json``) and plain
    ones; every call is counted, cached, retried and bounded like the run's own."""

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        role: str,
        temperature: float = 0.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        json_schema: JsonSchema | None = None,
        seed: int | None = None,
    ) -> Completion: ...


class Agent(Protocol):
    """Runs one episode of ``sample`` with ``playbook`` (text; empty before anything is
    learned) and ``llm``. An async agent gets the run's client (:class:`AgentLLM`); a plain
    function runs on a worker thread and gets a :class:`BlockingLLM` around it."""

    def __call__(self, sample: Sample, playbook: str, llm: Any) -> Episode | Awaitable[Episode]: ...


class BlockingLLM:
    """The run's client for an agent written as a plain function (on a worker thread): the
    same calls, each waiting for its reply on the run's event loop. Every keyword the async
    client takes (``tools``, ``tool_choice``, ``json_schema``, ``seed``, ...) goes through
    unchanged."""

    def __init__(self, llm: AgentLLM, loop: asyncio.AbstractEventLoop) -> None:
        self._llm = llm
        self._loop = loop

    def complete(self, messages: Sequence[Message], **options: Any) -> Completion:
        call = self._llm.complete(messages, **options)
        return asyncio.run_coroutine_threadsafe(call, self._loop).result()

    def complete_json(
        self, messages: Sequence[Message], **options: Any
    ) -> tuple[dict[str, Any], Completion]:
        call = self._llm.complete_json(messages, **options)
        return asyncio.run_coroutine_threadsafe(call, self._loop).result()

    @property
    def chat(self) -> Chat:
        """The OpenAI SDK's call shape: ``llm.chat.completions.create(messages=...)``."""
        from combee.llm.openai_compat import Chat  # the openai SDK, when an agent asks

        return Chat(self.complete)

    @property
    def async_chat(self) -> AsyncChat:
        """The same calls to await on an event loop of the agent's own thread (what
        ``combee.llm.openai_compat.async_openai`` hands the Agents SDK's ``Runner.run_sync``);
        each still runs on the run's loop."""
        from combee.llm.openai_compat import AsyncChat  # the openai SDK, when an agent asks

        return AsyncChat(self._complete_awaited)

    async def _complete_awaited(self, messages: Sequence[Message], **options: Any) -> Completion:
        call = self._llm.complete(messages, **options)
        if asyncio.get_running_loop() is self._loop:
            return await call
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(call, self._loop))


def check_max_threads(value: Any) -> int:
    """``value`` if it is a whole number of at least 1; else a :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"must be a whole number of at least 1: how many plain-function episodes may run "
            f"at once (got {value!r})",
            setting="max_threads",
        )
    return value


class AgentThreads:
    """Where agents written as plain functions run: a thread per episode in flight, made only
    when no idle one is left, at most ``max_threads`` (an episode beyond that waits for a
    thread to come free). Idle threads end with the pool; a copy for another process starts
    with none."""

    def __init__(self, max_threads: int = MAX_THREADS) -> None:
        self.max_threads = check_max_threads(max_threads)
        self._pool: ThreadPoolExecutor | None = None

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on one of the threads (in a copy of this context, as
        :func:`asyncio.to_thread` runs it)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.max_threads, thread_name_prefix="combee-agent")
        call = functools.partial(contextvars.copy_context().run, function, *args)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def __getstate__(self) -> dict[str, Any]:
        return {"max_threads": self.max_threads, "_pool": None}


_shared_threads = AgentThreads()
"""For :func:`run_agent` callers that bring no threads of their own."""


async def run_agent(
    agent: Agent,
    sample: Sample,
    playbook: str,
    llm: AgentLLM,
    threads: AgentThreads | None = None,
) -> Episode:
    """One episode: an async agent on this loop, a plain one on one of ``threads``; the agent's
    client is the run's for this episode (:func:`~combee.tasks.episode_llm.for_episode`). A step
    that never gave a valid action (:class:`InvalidStepError`, or a structured reply still
    invalid after the re-ask) is logged and raised as an :class:`InvalidStepError`."""
    llm = for_episode(llm)
    try:
        if inspect.iscoroutinefunction(agent) or inspect.iscoroutinefunction(type(agent).__call__):
            result = await agent(sample, playbook, llm)  # type: ignore[misc]
        else:
            blocking = BlockingLLM(llm, asyncio.get_running_loop())
            result = await (threads or _shared_threads).run(agent, sample, playbook, blocking)
        if inspect.isawaitable(result):
            result = await result
        return check_episode(result, sample)
    except (InvalidStepError, InvalidReplyError) as error:
        log.warning("invalid step in the episode of sample %s: %s", sample.id, error)
        if isinstance(error, InvalidStepError):
            raise
        raise InvalidStepError(f"sample {sample.id!r}: {error}") from error
    except CombeeError:
        raise  # an LLM call that failed for good, a setting: handled as such
    except Exception as error:  # the agent's own bug or its environment's: this sample only
        raise SampleError(f"the agent failed on sample {sample.id!r}: {error}") from error


def playbook_section(playbook: str) -> str:
    """The playbook introduced for the agent ("" when it is empty)."""
    text = playbook.strip()
    return f"{PLAYBOOK_HEADER}\n{text}" if text else ""


def with_playbook(system_prompt: str, playbook: str) -> str:
    """The default placement: ``playbook`` (as the agent received it) after the system prompt."""
    if not playbook.strip():
        return system_prompt
    return f"{system_prompt.rstrip()}\n\n{playbook}" if system_prompt.strip() else playbook


@dataclass
class AgentTask:
    """A task whose samples are task instances for ``agent``; train with method ``ace-agent``
    (``combee.train`` picks it for an :class:`AgentTask` when the method is left at ``ace``).

    ``playbook_text`` turns the rendered playbook into the text the agent receives (default
    :func:`playbook_section`). ``max_threads``: how many episodes of an agent written as a plain
    function may run at once (each on its own thread, made when needed); an ``async def`` agent
    runs on the event loop and is not bounded by it.
    """

    name: str
    agent: Agent
    train: Sequence[Sample]
    test: Sequence[Sample] = ()
    val: Sequence[Sample] = ()
    playbook_text: Callable[[str], str] = playbook_section
    max_threads: int = MAX_THREADS

    def __post_init__(self) -> None:
        check_max_threads(self.max_threads)
        if not callable(self.agent):
            raise ConfigError(
                f"must be a function agent(sample, playbook, llm) (got {self.agent!r})",
                setting="agent",
            )
        ids = [s.id for s in (*self.train, *self.val, *self.test)]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ConfigError(
                f"sample ids must be unique across the splits; repeated: {', '.join(repeated)}",
                setting="task",
            )

    def load(self) -> Splits:
        return Splits(train=list(self.train), val=list(self.val), test=list(self.test))

    def score(self, prediction: str, sample: Sample) -> Score:
        """Only for a sample whose episode failed to run: it counts as a failure."""
        return Score(correct=False, matched=0, total=1, feedback="the episode did not run")


def hidden_episode(episode: Episode, placeholders: Placeholders) -> Episode:
    """``episode`` as it is stored and reflected on: every secret and address in its messages,
    feedback and metadata replaced by its placeholder in ``placeholders`` (one object per run,
    so different values stay different: ``[[email_1]]``, ``[[email_2]]``). The agent's tools had
    the real values; no file and no reflector does."""
    return dataclasses.replace(
        episode,
        messages=[
            placeholders.hide_value(dict(m)) if isinstance(m, Mapping) else m
            for m in episode.messages
        ],
        feedback=placeholders.hide(episode.feedback),
        meta=placeholders.hide_value(dict(episode.meta)),
    )


def episode_score(episode: Episode) -> Score:
    return Score(
        correct=episode.succeeded,
        matched=int(episode.succeeded),
        total=1,
        feedback=episode.feedback,
    )


def episode_trace(sample: Sample, episode: Episode) -> Trace:
    """The episode as a recorded trace (what the reflector reads)."""
    try:
        messages = chat_messages(list(episode.messages))
    except MessageError as error:
        raise SampleError(f"the agent's episode for sample {sample.id!r}: {error}") from None
    return Trace(
        id=sample.id,
        task_id=str(sample.meta.get("task_id", sample.id)),
        messages=messages,
        outcome=Outcome(
            success=episode.succeeded, reward=episode.reward, feedback=episode.feedback
        ),
        source="episode",
        meta=dict(episode.meta),
    )


def check_episode(value: Any, sample: Sample) -> Episode:
    """``value`` if it is an :class:`Episode` with a reward in [0, 1]; else a clear error."""
    if not isinstance(value, Episode):
        raise SampleError(
            f"the agent returned {type(value).__name__} for sample {sample.id!r}; "
            "it must return a combee.Episode"
        )
    if value.reward is not None and not 0.0 <= value.reward <= 1.0:
        raise SampleError(
            f"the agent's reward for sample {sample.id!r} is {value.reward}, not in [0, 1]"
        )
    return value


def episode_record(sample: Sample, episode: Episode) -> dict[str, Any]:
    """One line of ``episodes.jsonl``: the OpenAI chat trace format with the outcome, which
    ``combee learn`` reads back."""
    return {
        "id": sample.id,
        "task_id": str(sample.meta.get("task_id", sample.id)),
        "messages": [dict(m) for m in episode.messages],
        "reward": episode.reward,
        "success": episode.succeeded,
        "feedback": episode.feedback,
        "metadata": json.loads(json.dumps(dict(episode.meta), default=str)),
    }
