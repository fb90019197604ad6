"""``combee demo``: a short but real Combee training on Formula, before/after in a few lines."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rich.console import Console

from combee.cli.endpoint import EndpointSettings
from combee.cli.train import TrainOptions, run_train


def demo_options(*, train: int, batch_size: int, test: int, seed: int, out: Path) -> TrainOptions:
    return TrainOptions(
        task="formula",
        data=None,
        scorer="exact",
        strategy="combee",
        batch_size=batch_size,
        epochs=1,
        duplication=2,
        fan_in=32,
        train_limit=train,
        val_limit=0,
        test_limit=test,
        val_every=0,
        token_budget=2000,
        temperature=0.0,
        max_tokens=768,
        initial_playbook=None,
        baseline=True,
        seed=seed,
        out=out,
        overwrite=True,
    )


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def summary(results: dict[str, Any], *, wall_s: float, playbook: str) -> list[str]:
    """The few lines the demo ends with."""
    calls = ", ".join(
        f"{role} {n}" for role, n in results["llm_calls"].items() if role != "preflight"
    )
    lines = ["", f"accuracy on {results['test_samples']} Formula test questions:"]
    if results.get("baseline_test_accuracy") is not None:
        lines.append(f"  without a playbook:        {results['baseline_test_accuracy']:.3f}")
    lines += [
        f"  with the learned playbook: {results['test_accuracy']:.3f}",
        f"wall time: {_minutes(wall_s)} in all (training {_minutes(results['train_seconds'])}, "
        f"final test {_minutes(results['test_seconds'])})",
        f"LLM calls: {calls}",
        f"learned playbook ({results['playbook_bullets']} bullets, "
        f"~{results['playbook_tokens']} tokens):",
        playbook.rstrip(),
    ]
    return lines


async def run_demo(
    endpoint: EndpointSettings,
    console: Console,
    *,
    train: int,
    batch_size: int,
    test: int,
    seed: int,
    out: Path,
) -> list[str]:
    started = time.perf_counter()
    results = await run_train(
        demo_options(train=train, batch_size=batch_size, test=test, seed=seed, out=out),
        endpoint,
        console,
    )
    playbook = (out / "playbook.txt").read_text(encoding="utf-8")
    return summary(results, wall_s=time.perf_counter() - started, playbook=playbook)
