"""AgentDojo user tasks as samples, split into train and test by seed within each suite."""

from __future__ import annotations

import logging
import random

from combee.errors import ConfigError
from combee.llm.types import DEFAULT_MAX_TOKENS
from combee.tasks.agent import AgentTask
from combee.tasks.agentdojo.agent import AgentDojoAgent
from combee.tasks.agentdojo.attacks import injection_task_for, load_attack, planted_texts
from combee.tasks.agentdojo.environment import (
    DEFAULT_VERSION,
    load_suite,
    module,
    plain,
    task_number,
)
from combee.tasks.base import Sample

log = logging.getLogger(__name__)

ALL = "all"
"""The suite name that takes every suite of the version."""

TASK_PREFIX = "agentdojo:"
"""Task names ``agentdojo:SUITE`` and, under an attack, ``agentdojo:SUITE@ATTACK``."""


def suite_names(version: str = DEFAULT_VERSION) -> list[str]:
    """The suites of benchmark ``version`` (``banking``, ``slack``, ``travel``, ``workspace``)."""
    load_suite("banking", version)  # checks the package and the version
    return sorted(module("agentdojo.task_suite.load_suites").get_suites(version))


def task_name(suite: str, attack: str | None = None) -> str:
    """A suite's task name: ``agentdojo:banking``, ``agentdojo:banking@direct``."""
    return f"{TASK_PREFIX}{suite}" + (f"@{attack}" if attack else "")


def parse_task_name(spec: str) -> tuple[str, str | None]:
    """``SUITE`` or ``SUITE@ATTACK`` (what follows ``agentdojo:``) as (suite, attack)."""
    suite, _, attack = spec.partition("@")
    if not suite.strip():
        raise ConfigError(
            "'agentdojo:' needs a suite after the colon, e.g. agentdojo:banking", setting="task"
        )
    return suite.strip(), attack.strip() or None


def agentdojo_samples(
    suite: str = "banking",
    version: str = DEFAULT_VERSION,
    *,
    attack: str | None = None,
    seed: int = 0,
) -> list[Sample]:
    """One sample per user task, in task order. ``meta["ground_truth"]`` holds the task's
    reference calls (``[{"name", "arguments"}]``) on the suite's default environment.

    With ``attack``, each user task is paired with an injection task chosen by ``seed``, the
    attack's texts are in ``meta["injections"]``, and tasks whose tools read no injection place
    are left out (they cannot be attacked)."""
    task_suite = load_suite(suite, version)
    if attack is not None:
        load_attack(attack, suite, version)
    environment = task_suite.load_and_inject_default_environment({})
    samples = []
    for task_id, task in sorted(task_suite.user_tasks.items(), key=lambda i: task_number(i[0])):
        task_environment = task.init_environment(environment.model_copy(deep=True))
        calls = [
            {"name": call.function, "arguments": plain(dict(call.args))}
            for call in task.ground_truth(task_environment)
        ]
        meta = {
            "task_id": task_id,
            "suite": suite,
            "version": version,
            "difficulty": str(getattr(task.DIFFICULTY, "name", task.DIFFICULTY)),
            "ground_truth": calls,
        }
        sample_id = f"{suite}/{task_id}"
        if attack is not None:
            injection_task = injection_task_for(suite, version, task_id, seed)
            injections = planted_texts(attack, suite, version, task_id, injection_task)
            if not injections:
                log.info("%s reads no injection place: left out under attack %s", task_id, attack)
                continue
            meta |= {"attack": attack, "injection_task": injection_task, "injections": injections}
            sample_id = f"{sample_id}+{injection_task}"
        samples.append(
            Sample(
                id=sample_id,
                question=str(task.PROMPT),
                answer=str(task.GROUND_TRUTH_OUTPUT),
                meta=meta,
            )
        )
    return samples


def _split(
    samples: list[Sample], train: int | None, test: int | None, seed: int, where: str
) -> tuple[list[Sample], list[Sample]]:
    total = len(samples)
    if train is None and test is None:
        test = total // 2
    if train is None:
        train = total - (test or 0)
    if test is None:
        test = total - train
    if train + test > total:
        raise ConfigError(
            f"and test together ask for {train + test} tasks; {where} has {total}",
            setting="train",
        )
    order = list(samples)
    random.Random(seed).shuffle(order)
    return order[:train], order[train : train + test]


def agentdojo_task(
    suite: str = "banking",
    *,
    seed: int = 0,
    train: int | None = None,
    test: int | None = None,
    version: str = DEFAULT_VERSION,
    attack: str | None = None,
    max_steps: int = 15,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    temperature: float = 0.0,
    steps: str = "native",
    feedback: str = "verdict",
) -> AgentTask:
    """The user tasks of AgentDojo's ``suite`` (or every suite: ``"all"``) as an
    :class:`AgentTask`, split at random by ``seed`` within each suite: ``train`` and ``test``
    tasks per suite (default: half each; one given, the rest is the other). Under ``attack``
    (one of AgentDojo's attacks), tool outputs carry the attack's planted instructions. The
    agent is :class:`AgentDojoAgent` with ``steps`` (``native`` tool calls or ``json``) and
    ``feedback`` (``verdict`` or ``reference``)."""
    for name, value in (("train", train), ("test", test)):
        if value is not None and value < 0:
            raise ConfigError(f"must be at least 0 (got {value})", setting=name)
    suites = suite_names(version) if suite == ALL else [suite]
    train_part: list[Sample] = []
    test_part: list[Sample] = []
    for name in suites:
        samples = agentdojo_samples(name, version, attack=attack, seed=seed)
        where = f"the AgentDojo {version} suite {name!r}" + (f" under {attack}" if attack else "")
        learn, hold = _split(samples, train, test, seed, where)
        train_part += learn
        test_part += hold
    agent = AgentDojoAgent(
        suite=suites[0],
        version=version,
        max_steps=max_steps,
        max_tokens=max_tokens,
        temperature=temperature,
        steps=steps,
        feedback=feedback,
    )
    return AgentTask(name=task_name(suite, attack), agent=agent, train=train_part, test=test_part)
