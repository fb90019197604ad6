"""MLflow, as the run tracker, the trace reader and the gateway's exports reach it: the package
(a ConfigError naming the extra when it is missing), the tracking URI a user means, that URI as it
may be shown (never with a password), and a quick check that a tracking server answers."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from combee.errors import ConfigError

INSTALL_HINT = "pip install 'combee[mlflow]'"


def import_mlflow() -> Any:
    """The ``mlflow`` package; a ConfigError naming the extra to install when it is missing."""
    try:
        import mlflow
    except ImportError:
        raise ConfigError(
            f"mlflow needs the mlflow package: {INSTALL_HINT}", setting="track"
        ) from None
    return mlflow


def tracking_uri_of(given: str | None) -> str | None:
    """``given``, else ``MLFLOW_TRACKING_URI``, else None (MLflow's own default)."""
    return given or os.environ.get("MLFLOW_TRACKING_URI") or None


def shown_uri(uri: str | None) -> str:
    """A tracking URI as it may be printed and recorded: without a user name or password."""
    if not uri:
        return "(MLflow's default)"
    parts = urlsplit(uri)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")
        return urlunsplit(parts._replace(netloc=netloc))
    return uri


def check_reachable(uri: str | None, *, setting: str = "tracking_uri") -> None:
    """A ConfigError naming ``setting`` when ``uri`` is an HTTP tracking server that does not
    answer (MLflow's own client retries for minutes first)."""
    if not uri or not uri.startswith(("http://", "https://")):
        return
    try:
        httpx.get(uri.rstrip("/") + "/health", timeout=10.0)
    except httpx.HTTPError as error:
        raise ConfigError(
            f"{shown_uri(uri)} does not answer ({type(error).__name__}): start the MLflow "
            "server, or give its address",
            setting=setting,
        ) from None
