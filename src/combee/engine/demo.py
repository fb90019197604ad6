"""The demo: a short but real Combee training on Formula, before/after in a few lines."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from combee.engine.resolve import LLMArg
from combee.engine.training import train_async
from combee.progress import ProgressArg


async def run_demo(
    llm: LLMArg,
    *,
    train_limit: int = 4,
    batch_size: int = 4,
    test_limit: int = 4,
    seed: int = 0,
    out: Path = Path("runs/demo"),
    progress: ProgressArg = None,
) -> list[str]:
    """Train with the ``combee`` strategy on ``train_limit`` Formula questions, score
    ``test_limit`` before and after; the lines that summarise it."""
    started = time.perf_counter()
    result = await train_async(
        "formula",
        strategy="combee",
        batch_size=batch_size,
        llm=llm,
        run_dir=out,
        overwrite=True,
        progress=progress,
        seed=seed,
        train_limit=train_limit,
        val_limit=0,
        test_limit=test_limit,
        token_budget=2000,
        max_tokens=768,
        baseline=True,
    )
    return summary(result.summary, wall_s=time.perf_counter() - started, playbook=result.text)


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def summary(results: dict[str, Any], *, wall_s: float, playbook: str) -> list[str]:
    """The few lines the demo ends with."""
    calls = ", ".join(
        f"{role} {n}" for role, n in results["llm_calls"].items() if role != "preflight"
    )
    bullets = results["playbook_bullets"]
    lines = ["", f"accuracy on {results['test_samples']} Formula test questions:"]
    if results.get("baseline_test_accuracy") is not None:
        lines.append(f"  without a playbook:        {results['baseline_test_accuracy']:.3f}")
    lines += [
        f"  with the learned playbook: {results['test_accuracy']:.3f}",
        f"wall time: {_minutes(wall_s)} in all (training {_minutes(results['train_seconds'])}, "
        f"final test {_minutes(results['test_seconds'])})",
        f"LLM calls: {calls}",
        f"learned playbook ({bullets} bullet{'' if bullets == 1 else 's'}, "
        f"~{results['playbook_tokens']} tokens):",
        playbook.rstrip(),
    ]
    return lines
