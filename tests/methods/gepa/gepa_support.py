"""Shared utilities for the GEPA tests (no tests here): a loopback LLM and reflective records."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from combee.llm import LLM, OpenAIBackend, Prices
from combee.methods.gepa import LoopRunner
from combee.sim import RequestRecord

RECORD_ID = re.compile(r"record-(\d{3})")


def make_llm(base_url: str, **options: Any) -> LLM:
    backend = OpenAIBackend(model="sim", base_url=base_url, timeout_s=10.0)
    options.setdefault("backoff_base_s", 0.001)
    options.setdefault("backoff_max_s", 0.01)
    options.setdefault("seed", 3)
    return LLM(backend, **options)


@contextmanager
def llm_on_runner(base_url: str, **options: Any) -> Iterator[tuple[LoopRunner, LLM]]:
    """An LLM living on a private loop thread, as gepa's synchronous engine uses it."""
    runner = LoopRunner()
    llm = make_llm(base_url, **options)
    try:
        yield runner, llm
    finally:
        runner.run(llm.aclose())
        runner.close()


def records(n: int, *, offset: int = 0) -> list[dict[str, Any]]:
    """``n`` reflective records, each wrong, each about its own formula, each with an id."""
    return [
        {
            "Inputs": {
                "context": f"Use formula Topic {i} to answer the question.",
                "question": f"What is the value for record-{i:03d}?",
            },
            "Generated Outputs": {"reasoning": "guess", "final_answer": "1.00"},
            "Feedback": f"Wrong: the answer '1.00' does not match the correct answer '{i}.00'.",
        }
        for i in range(offset, offset + n)
    ]


def user_text(record: RequestRecord) -> str:
    return "\n".join(str(m["content"]) for m in record.body["messages"] if m["role"] == "user")


def record_ids(record: RequestRecord) -> list[int]:
    return [int(m) for m in RECORD_ID.findall(user_text(record))]


def by_schema(records_: list[RequestRecord], name: str) -> list[RequestRecord]:
    return [r for r in records_ if r.schema_name == name and r.status == 200]


__all__ = ["Prices", "by_schema", "llm_on_runner", "make_llm", "record_ids", "records", "user_text"]
