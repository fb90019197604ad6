"""CPU per LLM call of each HTTP client, alone: no prompts, playbook or schema checks.

``N`` concurrent chat-completions calls (a short prompt, a JSON-schema reply) against the
simulated server in its own process, every call taking ``--ttft`` seconds there; the figure is
``time.process_time()`` of this process around ``asyncio.gather`` of the calls, divided by N.
The first round warms connections and imports and is not counted; the next rounds are.

    python benchmarks/client_cpu.py [--calls 500] [--ttft 0.4] [--rounds 3]
        [--prompt-chars 2000] [--profile sdk]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import statistics
import time
from typing import Any

from combee.bench.server_process import SimServerProcess
from combee.llm.lean_backend import LeanBackend
from combee.llm.openai_backend import OpenAIBackend
from combee.llm.types import JsonSchema, Request
from combee.sim import SimConfig

SCHEMA = JsonSchema(
    "answer",
    {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "final_answer": {"type": "string"}},
        "required": ["reasoning", "final_answer"],
        "additionalProperties": False,
    },
)


def make_backend(kind: str, base_url: str, calls: int) -> Any:
    if kind == "sdk":
        return OpenAIBackend(model="sim", base_url=base_url, max_connections=calls)
    return LeanBackend(model="sim", base_url=base_url, max_connections=calls)


def request(i: int, prompt_chars: int) -> Request:
    question = f"Question {i}: what is the net present value of the cash flows in case {i}?"
    question = (question + " Context: " + "cash flow 120, rate 5%; " * prompt_chars)[:prompt_chars]
    return Request.build(
        [
            {"role": "system", "content": "You answer finance questions."},
            {"role": "user", "content": question},
        ],
        json_schema=SCHEMA,
        seed=i,
    )


async def rounds(
    kind: str, base_url: str, calls: int, count: int, prompt_chars: int, profile: bool
) -> list[float]:
    backend = make_backend(kind, base_url, calls)
    requests = [request(i, prompt_chars) for i in range(calls)]
    per_call: list[float] = []
    profiler = cProfile.Profile() if profile else None
    try:
        for index in range(count + 1):
            if profiler is not None and index == 1:
                profiler.enable()
            started = time.process_time()
            await asyncio.gather(*(backend.complete(r) for r in requests))
            if index > 0:
                per_call.append((time.process_time() - started) / calls * 1000)
        if profiler is not None:
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    finally:
        await backend.aclose()
    return per_call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--ttft", type=float, default=0.4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default="sdk,lean")
    parser.add_argument("--prompt-chars", type=int, default=2000, help="user message length")
    parser.add_argument("--profile", choices=["sdk", "lean"], default=None)
    args = parser.parse_args()
    server = SimServerProcess(SimConfig(ttft_s=args.ttft, capacity=4096), script="echo")
    server.start()
    try:
        for kind in args.clients.split(","):
            figures = asyncio.run(
                rounds(
                    kind,
                    server.base_url,
                    args.calls,
                    args.rounds,
                    args.prompt_chars,
                    args.profile == kind,
                )
            )
            shown = ", ".join(f"{f:.2f}" for f in figures)
            print(
                f"{kind}: {args.calls} concurrent calls of {args.ttft:g} s: CPU per call "
                f"{statistics.median(figures):.2f} ms median ({shown} ms per round)"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
