"""The registered ACE methods made by name and keyword, as the engine makes them: each method's own
options and the settings the three share reach the method they build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from combee.engine.resolve import learner_of
from combee.errors import ConfigError
from combee.methods.ace.agent import AgentAceMethod
from combee.methods.ace.method import AceMethod
from combee.methods.ace.settings import AceSettings
from combee.methods.ace.traces import TraceAceMethod
from combee.tasks.base import Sample

ACE = AceSettings(dedup=False, token_budget=9000)
SHARED = {"ace": ACE, "temperature": 0.25, "max_tokens": 77}
# What the engine offers every method; each factory takes only what it accepts.
OFFERED = {"seed": 3, "run_dir": None, "task_samples": (), "traces": ()}


def llm() -> Any:
    return object()  # never called: building a method makes no request


def score(prediction: str, sample: Sample) -> Any:
    raise AssertionError("not called")


def agent(sample: Sample, playbook: str, llm: Any) -> Any:
    raise AssertionError("not called")


def shares(method: AceMethod) -> None:
    assert method.settings is ACE
    assert (method.temperature, method.max_tokens) == (0.25, 77)
    assert method.near_duplicates is None


def test_ace() -> None:
    samples = [Sample(id="s1", question="What is 2+2?", answer="4")]
    options = {**OFFERED, **SHARED, "task_samples": samples}
    learner = learner_of("ace", llm(), score, options)
    assert learner.name == "ace" and type(learner.ace) is AceMethod
    shares(learner.ace)
    assert learner.ace.score is score and learner.ace.check_copies


def test_ace_without_screening_samples() -> None:
    learner = learner_of("ace", llm(), score, {**OFFERED, **SHARED})
    assert learner.ace.shared is None and not learner.ace.check_copies


def test_ace_traces() -> None:
    options = {**OFFERED, **SHARED, "contrast": True, "transcript_tokens": 1234}
    learner = learner_of("ace-traces", llm(), score, options)
    assert learner.name == "ace-traces" and isinstance(learner.ace, TraceAceMethod)
    shares(learner.ace)
    assert learner.ace.contrast and learner.ace.transcript_tokens == 1234


def test_ace_agent(tmp_path: Path) -> None:
    def section(text: str) -> str:
        return text

    options = {
        **OFFERED,
        **SHARED,
        "agent": agent,
        "playbook_text": section,
        "max_threads": 3,
        "transcript_tokens": 4321,
        "run_dir": tmp_path,
    }
    learner = learner_of("ace-agent", llm(), score, options)
    method = learner.ace
    assert learner.name == "ace-agent" and isinstance(method, AgentAceMethod)
    shares(method)
    assert method.agent is agent and method.playbook_text is section
    assert method.threads.max_threads == 3 and method.transcript_tokens == 4321
    assert method.episodes_file == tmp_path / "episodes.jsonl"


def test_ace_agent_without_run_dir_keeps_no_episodes() -> None:
    learner = learner_of("ace-agent", llm(), score, {"agent": agent, "run_dir": None})
    assert learner.ace.episodes_file is None


@pytest.mark.parametrize("name", ["ace", "ace-traces", "ace-agent"])
def test_a_chosen_setting_a_method_does_not_take_is_refused(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        options = {"agent": agent, "max_metric_calls": 5}
        learner_of(name, llm(), score, options, insist={"max_metric_calls"})
    assert caught.value.setting == "max_metric_calls"
