"""``combee sim-server``: a scripted model over the OpenAI chat-completions API."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from combee.cli.app import app, err, fail
from combee.cli.flags import cli_message
from combee.errors import CombeeError


@app.command("sim-server")
def sim_server_command(
    host: Annotated[str, typer.Option(help="Bind address (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port (0: any free one).")] = 8000,
    script: Annotated[
        str,
        typer.Option(
            help="ace | gepa (scripted roles) | echo | arbitrary (random schema-valid JSON) | "
            "agentdojo[:SUITE] (AgentDojo's agent: each user task's reference tool calls, "
            "ACE's roles for the rest; needs combee[agentdojo])."
        ),
    ] = "ace",
    seed: Annotated[int, typer.Option(help="Seed of every latency and fault draw.")] = 0,
    ttft: Annotated[float, typer.Option(help="Seconds to first token per call.")] = 0.0,
    decode_tps: Annotated[
        float | None, typer.Option(help="Completion tokens per second per call (none: instant).")
    ] = None,
    prompt_tps: Annotated[
        float | None, typer.Option(help="Prompt tokens read per second per call (none: instant).")
    ] = None,
    capacity: Annotated[
        int | None,
        typer.Option(help="Calls served at once, like a vLLM batch; the rest queue FIFO."),
    ] = None,
    jitter: Annotated[
        float, typer.Option(help="Scale each latency by uniform(1-j, 1+j), 0 <= j < 1.")
    ] = 0.0,
    straggler_rate: Annotated[float, typer.Option(help="Share of calls that straggle.")] = 0.0,
    straggler_factor: Annotated[float, typer.Option(help="How many times slower.")] = 5.0,
    rate_429: Annotated[float, typer.Option(help="Share of calls answered 429.")] = 0.0,
    retry_after: Annotated[float, typer.Option(help="Retry-After seconds sent with 429.")] = 1.0,
    rate_500: Annotated[float, typer.Option(help="Share of calls answered 500.")] = 0.0,
    rate_hang: Annotated[
        float, typer.Option(help="Share of calls that hang (until --hang-s or the client leaves).")
    ] = 0.0,
    hang_s: Annotated[float, typer.Option(help="How long a hanging call hangs.")] = 600.0,
    rate_bad_body: Annotated[
        float, typer.Option(help="Share of calls answered 200 with truncated or non-JSON body.")
    ] = 0.0,
    log: Annotated[
        Path | None,
        typer.Option(
            help="Append one JSON line per chat request (arrived, finished, status) to this file."
        ),
    ] = None,
) -> None:
    """Serve a scripted model over the OpenAI chat-completions API.

    Simulated latency and injected faults are set by the flags below, all seeded. Needs the
    sim extra: pip install 'combee\\[sim]'.
    """
    from combee.sim.extra import require

    try:
        require("combee sim-server")
    except CombeeError as error:
        raise fail(cli_message(error)) from None

    from combee.sim.arbitrary import arbitrary_responder
    from combee.sim.config import SimConfig
    from combee.sim.responders import Responder, echo_responder
    from combee.sim.running import run_server

    responder: Responder
    if script == "ace":
        from combee.sim.ace_script import ace_responder as responder
    elif script == "gepa":
        from combee.sim.gepa_script import gepa_responder as responder
    elif script == "arbitrary":
        responder = arbitrary_responder(seed)
    elif script == "echo":
        responder = echo_responder
    elif script.partition(":")[0] == "agentdojo":
        from combee.sim.agentdojo_script import agentdojo_script

        try:
            responder = agentdojo_script(script)
        except CombeeError as error:  # an unknown suite, AgentDojo not installed
            raise fail(f"--script {script!r}: {error}") from None
    else:
        raise fail(f"--script {script!r}: choose ace, gepa, echo, arbitrary or agentdojo[:SUITE]")
    try:
        config = SimConfig(
            seed=seed,
            ttft_s=ttft,
            decode_tokens_per_s=decode_tps,
            prompt_tokens_per_s=prompt_tps,
            capacity=capacity,
            jitter=jitter,
            straggler_rate=straggler_rate,
            straggler_factor=straggler_factor,
            rate_429=rate_429,
            retry_after_s=retry_after,
            rate_500=rate_500,
            rate_hang=rate_hang,
            hang_s=hang_s,
            rate_bad_body=rate_bad_body,
        )
    except CombeeError as error:
        raise fail(cli_message(error)) from None
    err.print(f"combee sim-server ({script}) on http://{host}:{port}/v1", highlight=False)
    run_server(responder, config, host=host, port=port, log=log)
