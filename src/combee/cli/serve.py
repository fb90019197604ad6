"""``combee serve``: the learning gateway, and its store's commands (learn, rollback, export,
playbook)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from combee.cli import options as opt
from combee.cli.app import app, err, fail, run, user_errors
from combee.cli.learn import LEARN_RUN_SETTINGS
from combee.cli.setting_options import settings_from_options, with_setting_options
from combee.serve.records import DEFAULT_NAMESPACE
from combee.serve.settings import SERVE_SETTINGS
from combee.strategies.names import STRATEGY_HELP

serve_app = typer.Typer(
    help="The learning gateway: an OpenAI-compatible endpoint in front of yours that puts the "
    "playbook into every request, records every exchange, takes feedback and learns.",
    no_args_is_help=False,
    invoke_without_command=True,
)
app.add_typer(serve_app, name="serve")

Store = Annotated[
    str, typer.Option(help="The gateway's store: its folder, or its postgresql:// URL.")
]
Namespace = Annotated[str, typer.Option("--agent", help="The agent namespace.")]
_LEARNING = [*SERVE_SETTINGS, *LEARN_RUN_SETTINGS]


@serve_app.callback()
@with_setting_options(_LEARNING)
@opt.with_endpoint_options()
def serve_command(
    ctx: typer.Context,
    upstream: Annotated[
        str | None,
        typer.Option(
            envvar="COMBEE_UPSTREAM",
            help="The OpenAI-compatible endpoint agents' requests go to, e.g. "
            "http://127.0.0.1:8000/v1, or local[:smollm2|PATH.gguf] for the embedded model.",
        ),
    ] = None,
    agent_token: Annotated[
        str | None,
        typer.Option(
            "--agent-token",
            "--token",
            envvar=["COMBEE_AGENT_TOKEN", "COMBEE_SERVE_TOKEN"],
            help="The agents' token (Authorization: Bearer TOKEN): chat, models and feedback "
            "need it, and feedback text sent with it is untrusted. Without it anyone may use "
            "those routes. --token and COMBEE_SERVE_TOKEN are its earlier names. Give it in "
            "COMBEE_AGENT_TOKEN, out of ps; never logged.",
        ),
    ] = None,
    operator_token: Annotated[
        str | None,
        typer.Option(
            envvar="COMBEE_OPERATOR_TOKEN",
            help="The operator's token: POST /v1/learn, POST /v1/playbook/rollback and GET "
            "/v1/playbook need it (closed without it, unless --open-operator-routes), and "
            "feedback text sent with it is trusted as a checker's. Give it in "
            "COMBEE_OPERATOR_TOKEN, out of ps; never logged.",
        ),
    ] = None,
    learn: Annotated[
        bool,
        typer.Option(help="Learn from scored traces in this process (--no-learn: record only)."),
    ] = True,
    strategy: Annotated[str, typer.Option(help=STRATEGY_HELP)] = "combee",
    batch_size: Annotated[
        str, typer.Option(help="Traces per iteration of a round (default: up to 40), or auto.")
    ] = "40",
    track: Annotated[
        str | None,
        typer.Option(
            help="Track the learning rounds in mlflow (a run per namespace, a step each)."
        ),
    ] = None,
    tracking_uri: opt.TrackingUri = None,
    experiment: opt.Experiment = "combee",
    **options: Any,
) -> None:
    """Serve the gateway until Ctrl-C or SIGTERM (in-flight requests finish first).

    Agents point their base_url at http://HOST:PORT/v1 (or /agents/NAME/v1 for a namespace of
    their own). The learner's model is --model at --base-url (default: the upstream).
    """
    if ctx.invoked_subcommand is not None:
        return
    if not upstream:
        raise fail("give --upstream URL: the OpenAI-compatible endpoint the agents' requests go to")
    from combee.errors import CombeeError
    from combee.serve.running import create_gateway, serve
    from combee.serve.settings import serve_settings

    values = settings_from_options(_LEARNING, options)
    serve_values = {item.name: values.pop(item.name) for item in SERVE_SETTINGS}
    if not options["base_url"] and not (
        upstream.startswith("local") and options["model"].startswith("local")
    ):
        options["base_url"] = upstream
    endpoint = opt.endpoint_of(options, cache=None, seed=values["seed"])
    tracker: Any = None
    try:
        settings = serve_settings(**serve_values)
        tracker = _round_tracker(
            track, tracking_uri, experiment,
            {"serve": serve_values, "model": endpoint.model,
             "learn": {**values, "strategy": strategy, "batch_size": batch_size}},
        )  # fmt: skip
        gateway, asgi = create_gateway(
            upstream,
            settings=settings,
            model="" if endpoint.model.startswith("local") else endpoint.model,
            api_key_env=endpoint.api_key_env,
            agent_token=agent_token,
            operator_token=operator_token,
            redact=endpoint.redact,
            learner_llm=endpoint if learn else None,
            learn_settings={
                **values, "strategy": strategy, "batch_size": opt.batch_size_value(batch_size)
            },
            on_round=_round_printer(tracker),
        )  # fmt: skip
    except CombeeError as problem:
        from combee.cli.flags import cli_message

        if tracker is not None:
            tracker.close()
        raise fail(cli_message(problem)) from None
    learning = (
        f"learning every {settings.learn_every} scored trace(s) with {endpoint.model} "
        f"(activate: {settings.activate})"
        if learn and settings.learn_every
        else "not learning on its own"
    )
    if tracker is not None:
        learning += f"; rounds tracked in MLflow experiment {experiment}"
    err.print(
        f"combee serve: http://{settings.host}:{settings.port}/v1 -> {gateway.upstream.base_url}; "
        f"store {gateway.store.name}; {learning}\n  {gateway.access.summary()}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    try:
        serve(asgi, settings)
    finally:
        if tracker is not None:
            tracker.close()


def _round_tracker(
    track: str | None, tracking_uri: str | None, experiment: str, params: dict[str, Any]
) -> Any:
    """The round observer ``--track`` asks for (None without it)."""
    if track is None:
        return None
    from combee.errors import ConfigError

    if track != "mlflow":
        raise ConfigError(f"{track!r} is not a tracker; use mlflow", setting="track")
    from combee.serve.round_tracking import RoundTracker

    return RoundTracker(tracking_uri=tracking_uri, experiment=experiment, params=params)


def _round_printer(tracker: Any) -> Any:
    """``on_round``: each round's line on stderr, then to ``tracker`` (when given)."""

    def on_round(result: Any) -> None:
        err.print(result.line(), markup=False, highlight=False)
        if tracker is not None:
            tracker(result)

    return on_round


@serve_app.command("learn")
@with_setting_options(LEARN_RUN_SETTINGS)
@opt.with_endpoint_options()
def learn_round_command(
    store: Store = "combee-serve",
    agent: Namespace = DEFAULT_NAMESPACE,
    activate: Annotated[str, typer.Option(help="always | checked.")] = "always",
    strategy: Annotated[str, typer.Option(help=STRATEGY_HELP)] = "combee",
    batch_size: Annotated[str, typer.Option(help="Traces per iteration, or auto.")] = "40",
    **options: Any,
) -> None:
    """One learning round now on the store's new scored traces (a worker beside the gateway:
    the gateway serves the new version within a second)."""
    from combee.serve.learner import learn_round
    from combee.serve.settings import serve_settings
    from combee.serve.store import TraceStore

    values = settings_from_options(LEARN_RUN_SETTINGS, options)
    endpoint = opt.endpoint_of(options, cache=None, seed=values["seed"])

    async def once() -> str:
        settings = serve_settings(store=store, activate=activate)
        with TraceStore(store) as opened:
            result = await learn_round(
                opened, agent, llm=endpoint, settings=settings, seed=values["seed"],
                learn_settings={
                    **values, "strategy": strategy, "batch_size": opt.batch_size_value(batch_size)
                },
            )  # fmt: skip
        return result.line()

    err.print(run(once()), markup=False, highlight=False)


@serve_app.command("rollback")
def rollback_command(
    store: Store = "combee-serve",
    agent: Namespace = DEFAULT_NAMESPACE,
    version: Annotated[
        int | None, typer.Option(help="The version to serve (default: the active one's parent).")
    ] = None,
) -> None:
    """Serve an earlier playbook version again (a running gateway picks it up within a second)."""
    from combee.serve.playbook_routes import rollback_target
    from combee.serve.store import TraceStore
    from combee.serve.store_writes import activate_version

    with user_errors(), TraceStore(store) as opened:
        target = version if version is not None else rollback_target(opened, agent)
        opened.write(activate_version(agent, target))
    err.print(f"namespace {agent}: playbook v{target} is active", highlight=False)


@serve_app.command("playbook")
def playbook_command(
    store: Store = "combee-serve",
    agent: Namespace = DEFAULT_NAMESPACE,
) -> None:
    """Print the active playbook; list every version on stderr."""
    from combee.serve.store import TraceStore

    with user_errors(), TraceStore(store) as opened:
        versions = opened.versions(agent)
    if not versions:
        raise fail(f"namespace {agent} has no playbook yet in {opened.name}")
    for v in versions:
        err.print(
            f"v{v.version} {v.status:8} {len(v.traces):4} trace(s)  {v.note}", highlight=False
        )
    active = next((v for v in versions if v.status == "active"), None)
    if active is not None:
        typer.echo(active.text)


@serve_app.command("export")
def export_command(
    store: Store = "combee-serve",
    out: Annotated[Path, typer.Option(help="The JSON Lines file to write.")] = Path("traces.jsonl"),
    agent: Namespace = DEFAULT_NAMESPACE,
    scored: Annotated[bool, typer.Option(help="Only traces with feedback.")] = False,
    format: Annotated[
        str,
        typer.Option(
            help="openai: a JSON Lines file (--out); mlflow: traces of an MLflow "
            "experiment (--tracking-uri, --experiment)."
        ),
    ] = "openai",
    tracking_uri: opt.TrackingUri = None,
    experiment: Annotated[
        str, typer.Option(help="--format mlflow: the MLflow experiment the traces go to.")
    ] = "combee-serve",
) -> None:
    """Write the store's conversations in the OpenAI chat trace format (``combee learn`` and
    ``combee eval-traces`` read it), or as traces of an MLflow experiment (``combee learn
    --traces mlflow:EXPERIMENT`` reads them; exporting again adds no duplicate)."""
    if format == "mlflow":
        return _export_mlflow(store, agent, scored, tracking_uri, experiment)
    if format != "openai":
        raise fail(f"--format {format!r} is not a format; use openai or mlflow")
    from combee.serve.export import export_chat

    with user_errors():
        count = export_chat(store, out, namespace=agent, scored_only=scored)
    err.print(f"wrote {count} trace(s) to {out}", highlight=False)


def _export_mlflow(
    store: str, agent: str, scored: bool, tracking_uri: str | None, experiment: str
) -> None:
    from combee.cli.flags import cli_message
    from combee.errors import CombeeError
    from combee.mlflow_store import shown_uri, tracking_uri_of
    from combee.serve.mlflow_export import export_mlflow

    try:
        count = export_mlflow(
            store, namespace=agent, tracking_uri=tracking_uri, experiment=experiment,
            scored_only=scored,
        )  # fmt: skip
    except CombeeError as problem:
        raise fail(cli_message(problem)) from None
    where = shown_uri(tracking_uri_of(tracking_uri))
    err.print(
        f"wrote or updated {count} trace(s) in MLflow experiment {experiment} at {where}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
