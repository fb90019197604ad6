"""The gateway's settings, declared once (the command line's flags come from here)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from combee.declare import SettingsGroup, checked, declared, setting
from combee.errors import ConfigError

ACTIVATION = ("always", "checked")


@dataclass(frozen=True)
class ServeSettings(SettingsGroup):
    OWNER = "serve"

    host: str = setting("127.0.0.1", "Address to listen on (127.0.0.1: this machine only).")
    port: int = setting(8700, "Port to listen on.", least=1, most=65535)
    store: str = setting(
        "combee-serve",
        "The trace store: a folder (an SQLite file and the learning rounds), or a PostgreSQL "
        "URL (postgresql://USER@HOST/DB) that several gateway replicas share.",
    )
    rounds_folder: str = setting(
        "",
        "Folder of the learning rounds' run directories (none: the store's folder; with a "
        "PostgreSQL store, combee-serve).",
    )
    playbook: str = setting(
        "", "A file holding the starting playbook (version 1 of every namespace; none: empty)."
    )
    learn_every: int = setting(
        20,
        "Run a learning round once this many traces have new feedback (0: never on its own; "
        "rounds run by `combee serve learn` or POST /v1/learn).",
        least=0,
    )
    learn_interval: float = setting(
        10.0, "Seconds between looks at the store for new feedback.", least=0.1
    )
    activate: str = setting(
        "always",
        "always: a learned playbook is served at once; checked: only if the offline check "
        "on held-out traces (eval-traces) does not drop.",
        choices=ACTIVATION,
    )
    check_share: float = setting(
        0.25,
        "Share of a round's scored traces held out for the offline check (activate=checked).",
        least=0.05,
        most=0.9,
    )
    max_reply_mb: float = setting(
        64.0,
        "Largest upstream reply the gateway reads whole, in MB (a larger one gets 502 and is "
        "not read further; streams pass through as they arrive).",
        least=0.001,
    )
    max_body_mb: float = setting(
        32.0, "Largest request body accepted, in MB (a larger one gets 413).", least=0.001
    )
    upstream_timeout: float = setting(
        120.0,
        "Seconds a proxied call's upstream may stay silent: before its reply starts, and "
        "between two parts of a streamed reply. Past it the agent gets 504 and the upstream's "
        "connection is closed.",
        least=0.1,
        most=3600.0,
    )
    max_namespaces: int = setting(
        10_000,
        "Most agent namespaces the store keeps: a request that would make one more gets 403 "
        "(the namespaces there keep working).",
        least=1,
    )
    open_operator_routes: bool = setting(
        False,
        "Open the operator routes (POST /v1/learn, POST /v1/playbook/rollback, GET /v1/playbook) "
        "to every caller the chat route takes (anyone, or the agent token's holders): only on "
        "a trusted single-user machine. Without it they need the operator token, and are "
        "closed when none is set. Feedback text is trusted only with the operator token.",
    )


SERVE_SETTINGS = declared(ServeSettings)


def serve_settings(**given: Any) -> ServeSettings:
    """``ServeSettings`` from keywords, each checked (a ConfigError names a bad one)."""
    names = {f.name for f in fields(ServeSettings)}
    unknown = sorted(set(given) - names)
    if unknown:
        raise ConfigError(
            f"is not a gateway setting (settings: {', '.join(sorted(names))})",
            setting=unknown[0],
        )
    values = {
        item.name: checked(item, given.get(item.name, item.default)) for item in SERVE_SETTINGS
    }
    return ServeSettings(**values)
