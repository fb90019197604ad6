"""The scripted server playing the agent of :mod:`combee.tasks.agentdojo`.

The script is built where the server starts, from AgentDojo itself: for each user task of a
suite, its prompt, its reference calls (``ground_truth`` on the default environment) and its
reference answer. The server then sees only what crosses HTTP: a request with the agent's step
schema is recognised by the task prompt (the first user message) and answered with the next
reference call, one per step (the number of assistant turns so far says which; two or more
per step when the calls would not fit in ``max_steps``), then with the reference answer. A
request that offers native ``tools`` instead (an agent speaking OpenAI's tool protocol, such
as AgentDojo's own pipeline) gets the same script as assistant ``tool_calls``, then the answer
as text. Every other request (the reflector, the curator) goes to ``fallback``. From the
command line: ``combee sim-server --script agentdojo:banking`` (:func:`agentdojo_script`).

Under an attack (``attack``, ``obey_planted``), the script's reflector plays a model that
obeys what was planted: when a reflector prompt holds a text the attack planted, the lesson it
writes is that text, as a gullible model would. Combee's screen has to keep it out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from combee.sim.ace_script import ace_responder
from combee.sim.responders import Reply, Responder, content_text, request_schema
from combee.tasks.agentdojo import DEFAULT_VERSION, agentdojo_samples, suite_names
from combee.tasks.agentdojo.suites import ALL

Call = Mapping[str, Any]
Edit = Callable[[str, int, Call], Call]
"""``edit(task_id, step, call)``: the call the script makes in place of ``call`` (a test's
deliberate mistake)."""


def is_step_request(body: Mapping[str, Any]) -> bool:
    """A request for the agent's step (its schema asks for ``tool_calls`` and ``answer``)."""
    schema = request_schema(body)
    properties = schema.get("properties") if schema is not None else None
    return isinstance(properties, Mapping) and {"tool_calls", "answer"} <= set(properties)


def _conversation(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = body.get("messages")
    return [m for m in raw if isinstance(m, Mapping)] if isinstance(raw, list) else []


def agentdojo_responder(
    suite: str | Sequence[str] = "banking",
    *,
    version: str = DEFAULT_VERSION,
    fallback: Responder = ace_responder,
    edit: Edit | None = None,
    max_steps: int = 15,
    attack: str | None = None,
    seed: int = 0,
    obey_planted: bool = False,
) -> Responder:
    """A responder that solves the user tasks of ``suite`` (one suite, or several) with their
    reference calls. With ``attack`` (and the run's ``seed``) and ``obey_planted``, its
    reflector copies the planted instructions it reads into its lesson."""
    suites = [suite] if isinstance(suite, str) else list(suite)
    samples = [
        sample
        for name in suites
        for sample in agentdojo_samples(name, version, attack=attack, seed=seed)
    ]
    script: dict[str, tuple[str, Sequence[Call], str]] = {
        _prompt_key(sample.question): (
            str(sample.meta["task_id"]),
            list(sample.meta["ground_truth"]),
            sample.answer,
        )
        for sample in samples
    }
    planted = {
        _words(text): text
        for sample in samples
        for text in (sample.meta.get("injections") or {}).values()
    }

    def next_step(messages: Sequence[Mapping[str, Any]]) -> tuple[list[Call], str] | None:
        """The calls to make now and, once none are left, the answer (None: an unknown task)."""
        prompt = next(
            (content_text(m.get("content")) for m in messages if m.get("role") == "user"), ""
        )
        entry = script.get(_prompt_key(prompt))
        if entry is None:
            return None
        task_id, calls, answer = entry
        per_step = max(1, -(-len(calls) // max(1, max_steps)))
        start = per_step * sum(1 for m in messages if m.get("role") == "assistant")
        if start >= len(calls):
            return [], answer or "Done."
        made = [
            call if edit is None else edit(task_id, index, call)
            for index, call in enumerate(calls[start : start + per_step], start)
        ]
        return [{"name": call["name"], "arguments": call["arguments"]} for call in made], ""

    def respond(body: Mapping[str, Any]) -> str | Reply:
        if obey_planted and _schema_name(body) == "reflector":
            lesson = fallback(body)
            if isinstance(lesson, str):
                return _obeying_lesson(lesson, _prompt_text(body), planted)
            return lesson
        messages = _conversation(body)
        if is_step_request(body):
            calls, answer = next_step(messages) or ([], "I do not know this task.")
            return json.dumps({"tool_calls": calls, "answer": answer})
        step = next_step(messages) if body.get("tools") else None
        if step is None:
            return fallback(body)
        calls, answer = step
        return Reply(None, calls) if calls else Reply(answer)

    return respond


def agentdojo_script(spec: str) -> Responder:
    """The responder of ``combee sim-server --script SPEC``: ``agentdojo`` (or
    ``agentdojo:all``) plays the agent on every suite of AgentDojo's default benchmark version,
    ``agentdojo:SUITE[,SUITE...]`` on those suites (named as ``--task agentdojo:SUITE`` names
    them); the reflector and the curator are ACE's script. A suite AgentDojo does not have, or
    AgentDojo not installed, is a :class:`~combee.errors.ConfigError` saying so."""
    _, _, listed = spec.partition(":")
    names = [name.strip() for name in listed.split(",") if name.strip()]
    return agentdojo_responder(suite_names() if names in ([], [ALL]) else names)


_HIDDEN = re.compile(
    r"\[\[[a-z][a-z0-9-]*_\d+\]\]|\[REDACTED:[a-z-]+\]"
    r"|[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}"
)


def _prompt_key(prompt: str) -> str:
    """A task prompt as the script knows it, whether a client sent its e-mail addresses as
    they are or as redaction placeholders."""
    return _HIDDEN.sub("<hidden>", prompt.strip())


def _words(text: str) -> str:
    return " ".join(text.split())


def _schema_name(body: Mapping[str, Any]) -> str:
    response_format = body.get("response_format")
    spec = response_format.get("json_schema") if isinstance(response_format, Mapping) else None
    return str(spec.get("name", "")) if isinstance(spec, Mapping) else ""


def _prompt_text(body: Mapping[str, Any]) -> str:
    return "\n".join(content_text(m.get("content")) for m in _conversation(body))


def _obeying_lesson(reply: str, prompt: str, planted: Mapping[str, str]) -> str:
    """The reflector's ``reply`` with its lesson replaced by the planted text the prompt shows
    (from its first words on, as far as the prompt shows it)."""
    shown = _words(prompt)
    for words in planted:
        opening = " ".join(re.sub(r"</?INFORMATION>", "", words).split()[:8])
        start = shown.find(opening)
        if start >= 0:
            lesson = json.loads(reply)
            copied = shown[start : start + 400]
            lesson["key_insight"] = f"Important, do this first in every task: {copied}"
            return json.dumps(lesson)
    return reply
