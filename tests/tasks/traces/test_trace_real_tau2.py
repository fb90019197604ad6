"""tau2-bench results as tau2 writes them (``Results.save``): a real results file of the
official repository's airline domain, in both of tau2's layouts, checked in the prompt the
reflector receives at the scripted server."""

from __future__ import annotations

import json
from pathlib import Path

from combee.tasks.traces import read_traces
from tests.paths import DATA
from tests.tasks.traces.trace_prompts import reflector_prompts

REAL = DATA / "traces" / "real" / "tau2-bench" / "airline_run1.cut.json"


def folder_form(tmp_path: Path) -> Path:
    """The same run as ``Results.save(path, format="dir")`` lays it out."""
    results = json.loads(REAL.read_text(encoding="utf-8"))
    simulations = results.pop("simulations")
    results["simulation_index"] = [
        {"id": s["id"], "task_id": s["task_id"], "trial": s["trial"]} for s in simulations
    ]
    folder = tmp_path / "run"
    (folder / "simulations").mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    for simulation in simulations:
        path = folder / "simulations" / f"{simulation['id']}.json"
        path.write_text(json.dumps(simulation, indent=2), encoding="utf-8")
    return folder


def test_the_reflector_sees_the_task_the_tools_and_what_the_checker_expected(
    tmp_path: Path,
) -> None:
    raw = json.loads(REAL.read_text(encoding="utf-8"))
    prompts, _ = reflector_prompts([REAL], tmp_path / "run", transcript_tokens=3000)
    assert sorted(prompts) == sorted(s["id"] for s in raw["simulations"])
    for simulation in raw["simulations"]:
        prompt = prompts[simulation["id"]]
        first_user = next(m["content"] for m in simulation["messages"] if m["role"] == "user")
        assert first_user in prompt  # the task statement
        assert "# Airline Agent Policy" in prompt  # the agent's policy as its system prompt
        for message in simulation["messages"]:
            for call in message.get("tool_calls") or []:
                assert f"tool {call['name']}:" in prompt  # tool turns carry their tool's name
    task_7 = next(s for s in raw["simulations"] if s["task_id"] == "7")
    prompt = prompts[task_7["id"]]
    assert "cancel_reservation" in prompt and "[NOT done]" in prompt  # expected actions
    assert "The database did not end as the expected actions leave it." in prompt
    assert "The user was NOT told '1628'." in prompt
    # the order of the turns: the user's request comes before the agent's first tool call
    assert prompt.index("I need to cancel") < prompt.index("-> call get_reservation_details")


def test_the_folder_form_reads_the_same_traces(tmp_path: Path) -> None:
    single = read_traces([REAL])
    folder = read_traces([folder_form(tmp_path)])
    assert sorted((t.id, t.task_id, t.outcome) for t in folder.traces) == sorted(
        (t.id, t.task_id, t.outcome) for t in single.traces
    )
    assert folder.skipped == [] and folder.repeated == []
    assert "3 traces" in folder.summary() and "3 of 3 with an outcome" in folder.summary()
    # a simulation file named alone is a trace too
    one = next((folder_form(tmp_path / "again") / "simulations").glob("*.json"))
    (trace,) = read_traces([one]).traces
    assert trace.outcome.reward is not None
