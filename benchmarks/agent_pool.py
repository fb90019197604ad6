"""Agents written as plain functions, many at once: one training iteration of 24 episodes.

Each episode makes one LLM call through the blocking client it is handed, then waits
``--seconds`` in its own code (an environment step: a tool, a sandbox, a browser). The scripted
server, started in this process, plays the agent, the reflector and the curator. Prints the wall
time of ``combee.train`` (the 24 episodes, their reflections and the reduce); with every episode
on its own thread it is about one episode's time, not ``ceil(24 / threads)`` of them.

    python benchmarks/agent_pool.py [--episodes 24] [--seconds 3] [--async-agent]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import combee
from combee.llm import Endpoint
from combee.sim import serve_in_thread
from combee.sim.ace_script import ace_responder
from combee.tasks.agent import AgentTask, Episode
from combee.tasks.base import Sample


def make_agents(seconds: float) -> tuple[Any, Any]:
    def ended(sample: Sample, text: str) -> Episode:
        messages = [
            {"role": "user", "content": sample.question},
            {"role": "assistant", "content": text},
        ]
        return Episode(messages=messages, reward=0.0, feedback="the task was not done")

    def plain_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
        completion = llm.complete([{"role": "user", "content": sample.question}], role="agent")
        time.sleep(seconds)
        return ended(sample, completion.text)

    async def async_agent(sample: Sample, playbook: str, llm: Any) -> Episode:
        import asyncio

        completion = await llm.complete(
            [{"role": "user", "content": sample.question}], role="agent"
        )
        await asyncio.sleep(seconds)
        return ended(sample, completion.text)

    return plain_agent, async_agent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=24)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--async-agent", action="store_true", help="the agent as async def")
    args = parser.parse_args()
    plain_agent, async_agent = make_agents(args.seconds)
    samples = [
        Sample(id=f"t{n:03d}", question=f"Do task {n}.", answer="") for n in range(args.episodes)
    ]
    task = AgentTask("bench", agent=async_agent if args.async_agent else plain_agent, train=samples)
    with serve_in_thread(ace_responder) as server, tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        result = combee.train(
            task,
            batch_size=args.episodes,
            llm=Endpoint("sim", base_url=server.base_url),
            run_dir=Path(folder) / "run",
        )
        wall = time.perf_counter() - started
    kind = "async" if args.async_agent else "plain-function"
    print(
        f"{args.episodes} {kind} episodes of {args.seconds:g} s: {wall:.2f} s wall "
        f"(agent calls {result.llm_calls.get('agent', 0)}, "
        f"failed samples {result.summary['train_failed_samples']})"
    )


if __name__ == "__main__":
    main()
