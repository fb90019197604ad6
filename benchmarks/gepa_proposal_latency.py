"""How long a GEPA proposal takes with the Combee reflection strategy, in units of call latency.

Every call to the simulated server takes ``--latency`` seconds. One 16-record proposal is
4 concurrent proposal calls then 1 merge: about 2 latencies. An iteration with several
proposals through ``reflect_many`` is one wave of all their proposal calls then one wave of
merges: still about 2. For contrast, the same work with the calls issued one after another
(an LLM limited to one call at a time) takes ``k + 1`` latencies per proposal.

    python benchmarks/gepa_proposal_latency.py [--latency 0.3] [--records 16] [--jobs 4]
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any

from combee.llm import connect
from combee.methods.gepa import CombeeReflection, LoopRunner
from combee.sim import SimConfig, serve_in_thread
from combee.sim.gepa_script import gepa_responder
from combee.strategies import CombeeStrategy
from combee.strategies.settings import CombeeSettings


def records(n: int, offset: int) -> list[dict[str, Any]]:
    return [
        {
            "Inputs": {"question": f"Use formula Topic {i} to answer: case {i}?"},
            "Generated Outputs": {"final_answer": "1.00"},
            "Feedback": f"Wrong: the correct answer is '{i}.00'.",
        }
        for i in range(offset, offset + n)
    ]


def timed(label: str, latency: float, work: Callable[[], object]) -> float:
    started = time.perf_counter()
    work()
    seconds = time.perf_counter() - started
    print(f"{label:<58} {seconds:6.2f} s = {seconds / latency:4.1f} latencies")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--records", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()
    n, jobs_count, latency = args.records, args.jobs, args.latency
    with serve_in_thread(gepa_responder, SimConfig(ttft_s=latency)) as server:
        runner = LoopRunner()

        def strategy(concurrency: int) -> CombeeReflection:
            llm = connect("sim", base_url=server.base_url, concurrency=concurrency)
            made = CombeeReflection(
                llm, runner, CombeeStrategy(CombeeSettings(duplication=2), seed=0), seed=0
            )
            # Warm up: the first requests pay for connections and the SDK's lazy imports.
            made.reflect_many(
                [
                    ({"s": f"Warm up {j}."}, {"s": records(n, 10_000)}, ["s"])
                    for j in range(jobs_count)
                ]
            )
            return made

        concurrent, one_at_a_time = strategy(64), strategy(1)
        seed = {"system_prompt": "Answer the question."}
        one = [(seed, {"system_prompt": records(n, 0)}, ["system_prompt"])]
        many = [
            (
                {"system_prompt": f"Prompt {j}."},
                {"system_prompt": records(n, 100 * j)},
                ["system_prompt"],
            )
            for j in range(jobs_count)
        ]
        print(f"call latency {latency} s, {n} records per proposal, p=2, k={math.isqrt(n)}")
        timed(
            f"one proposal, concurrent map ({n} records)",
            latency,
            lambda: concurrent.reflect_many(one),
        )
        timed(
            f"one iteration, {jobs_count} proposals through reflect_many",
            latency,
            lambda: concurrent.reflect_many(many),
        )
        timed(
            "one proposal, calls one after another (contrast)",
            latency,
            lambda: one_at_a_time.reflect_many(
                [({"system_prompt": "Other."}, {"system_prompt": records(n, 0)}, ["system_prompt"])]
            ),
        )
        runner.close()


if __name__ == "__main__":
    main()
