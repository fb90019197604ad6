"""``combee``: train, learn, eval, eval-traces, demo, bench, compare, report, retention and
sim-server (each command in its own module)."""

from __future__ import annotations

from combee.cli import (
    bench,
    compare,
    demo,
    eval,
    eval_traces,
    learn,
    report,
    retention,
    serve,
    sim,
    train,
)
from combee.cli.app import app

__all__ = [
    "app",
    "bench",
    "compare",
    "demo",
    "eval",
    "eval_traces",
    "learn",
    "report",
    "retention",
    "serve",
    "sim",
    "train",
]

if __name__ == "__main__":
    app()
