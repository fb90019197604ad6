"""A learn run folder written before the settings of learning from traces had one name each
(``config.json`` said ``trace_format``, ``trace_limit``, and ``trace_since`` and
``trace_tracking_uri`` only when given) still resumes, and still serves ``eval-traces --run``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import combee
from combee.core.loop_observer import LoopObserver
from combee.engine.offline_eval import learned_run_settings
from combee.engine.resume import saved_settings
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder

SETTINGS = {"format": "tau", "holdout_tasks": 10, "limit": 8, "batch_size": 4}


class StopAfterOne(LoopObserver):
    def on_checkpoint(self, state: object) -> None:
        raise KeyboardInterrupt  # as Ctrl-C would, once iteration 1 is saved


def as_an_earlier_version_wrote_it(folder: Path) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text())
    earlier = {"format": "trace_format", "limit": "trace_limit"}
    rewritten = {earlier.get(key, key): value for key, value in config.items()}
    assert rewritten.pop("since") is None and rewritten.pop("tracking_uri") is None
    path.write_text(json.dumps(rewritten))


async def test_a_learn_run_with_the_earlier_keys_resumes_and_is_judged(tmp_path: Path) -> None:
    with serve_in_thread(ace_responder) as server:
        llm = combee.llm.connect("sim", base_url=server.base_url)
        try:
            whole = await combee.learn_async(
                ["tau-airline"], llm=llm, run_dir=tmp_path / "whole", **SETTINGS
            )
            cut = tmp_path / "cut"
            with pytest.raises(KeyboardInterrupt):
                await combee.learn_async(
                    ["tau-airline"], llm=llm, run_dir=cut, observers=[StopAfterOne()], **SETTINGS
                )
            as_an_earlier_version_wrote_it(cut)
            kind, saved = saved_settings(cut)
            assert kind == "learn" and saved["format"] == "tau" and saved["limit"] == 8
            resumed = await combee.resume_async(cut, llm=llm)
        finally:
            await llm.aclose()
    lines = (cut / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [1, 2]
    assert resumed.text == whole.text

    as_an_earlier_version_wrote_it(cut)  # the resumed run wrote today's names
    judged = learned_run_settings(cut)
    assert judged["format"] == "tau"
    assert judged["tasks"] == json.loads((cut / "config.json").read_text())["held_out_tasks"]
