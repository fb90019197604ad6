"""What the reflector is shown for each trace of a file: ``combee.learn`` run against the
scripted server, the reflector prompts recorded where the server receives them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import combee
from combee.llm import connect
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder

_TRACE_ID = re.compile(r"<trace_id>\n(.*?)\n</trace_id>", re.DOTALL)


def reflector_prompts(
    paths: list[Path], run_dir: Path, **settings: Any
) -> tuple[dict[str, str], combee.TrainResult]:
    """Each trace's reflector prompt (its user message) by trace id, and the run's result."""
    prompts: dict[str, str] = {}

    def recording(body: Mapping[str, Any]) -> str:
        spec = (body.get("response_format") or {}).get("json_schema") or {}
        if spec.get("name") == "reflector":
            text = "\n".join(str(m.get("content", "")) for m in body["messages"])
            found = _TRACE_ID.search(text)
            prompts[found.group(1) if found else f"#{len(prompts)}"] = text
        return ace_responder(body)

    with serve_in_thread(recording) as server:
        llm = connect("sim", base_url=server.base_url)
        try:
            result = combee.learn(
                [str(p) for p in paths], llm=llm, batch_size=4, run_dir=run_dir, **settings
            )
        finally:
            combee.sync.run_sync(llm.aclose(), async_name="aclose")
    return prompts, result
