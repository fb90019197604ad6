"""The playbook routes: ``GET /v1/playbook`` (the active version and the list),
``POST /v1/playbook/rollback`` and ``POST /v1/learn`` (a learning round now). They are operator
routes (:mod:`combee.serve.access`)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from combee.errors import ConfigError
from combee.serve.http_errors import BadRequest, error
from combee.serve.learner import RoundBusy
from combee.serve.records import PlaybookVersion
from combee.serve.request_body import json_body
from combee.serve.store import TraceStore
from combee.serve.store_writes import activate_version

if TYPE_CHECKING:
    from combee.serve.gateway import Gateway

logger = logging.getLogger(__name__)


async def playbook_route(gateway: Gateway, request: Request) -> Response:
    refused = gateway.access.operator_refusal(request)
    if refused is not None:
        return refused
    try:
        namespace = gateway.namespace_of(request)
    except BadRequest as problem:
        return error(problem.status, str(problem))
    gateway.refresh(namespace)  # as the store has it now (another process may have changed it)
    try:
        active = await gateway.playbook(namespace)
    except BadRequest as problem:  # a namespace past max_namespaces
        return error(problem.status, str(problem))
    versions = await asyncio.to_thread(gateway.store.versions, namespace)
    return JSONResponse(
        {
            "namespace": namespace,
            "active": None if active is None else version_json(active),
            "versions": [version_json(v, text=False) for v in versions],
        }
    )


async def rollback_route(gateway: Gateway, request: Request) -> Response:
    refused = gateway.access.operator_refusal(request)
    if refused is not None:
        return refused
    try:
        namespace = gateway.namespace_of(request)
        if await request.body():
            _, body = await json_body(request, gateway.settings.max_body_mb)
        else:
            body = {}
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        target = body.get("version")
        if target is not None and (isinstance(target, bool) or not isinstance(target, int)):
            raise BadRequest(f"version must be a whole number (got {target!r})")
        version: int = (
            target
            if target is not None
            else await asyncio.to_thread(rollback_target, gateway.store, namespace)
        )
        await gateway.store.write_async(activate_version(namespace, version))
    except BadRequest as problem:
        return error(problem.status, str(problem))
    except ConfigError as problem:
        return error(404, str(problem))
    gateway.refresh(namespace)
    logger.info("namespace %s: playbook v%d active (rollback)", namespace, version)
    return JSONResponse({"namespace": namespace, "active": version})


async def learn_route(gateway: Gateway, request: Request) -> Response:
    refused = gateway.access.operator_refusal(request)
    if refused is not None:
        return refused
    try:
        namespace = gateway.namespace_of(request)
    except BadRequest as problem:
        return error(problem.status, str(problem))
    if gateway.learner is None:
        return error(409, "this gateway does not learn (started without a learner model)")
    try:
        result = await gateway.learner.run_now(namespace)
    except RoundBusy as problem:
        return error(409, str(problem), kind="conflict")
    except Exception as problem:  # reported to the caller; the gateway keeps serving
        logger.error("learning round [%s] failed: %s", namespace, problem)
        return error(500, f"the learning round failed: {problem}", kind="server_error")
    return JSONResponse(
        {
            "namespace": namespace,
            "line": result.line(),
            "version": result.version,
            "activated": result.activated,
            "traces": result.traces,
            "check": result.check,
        }
    )


def rollback_target(store: TraceStore, namespace: str) -> int:
    """The version a rollback without a number goes back to: the active one's parent, else the
    latest retired version."""
    versions = store.versions(namespace)
    active = next((v for v in versions if v.status == "active"), None)
    if active is not None and active.parent is not None:
        return active.parent
    retired = [v.version for v in versions if v.status == "retired"]
    if not retired:
        raise ConfigError(
            f"namespace {namespace!r} has no earlier playbook to go back to", setting="version"
        )
    return retired[-1]


def version_json(version: PlaybookVersion, *, text: bool = True) -> dict[str, Any]:
    found: dict[str, Any] = {
        "version": version.version,
        "status": version.status,
        "created": version.created,
        "parent": version.parent,
        "traces": len(version.traces),
        "check": version.check,
        "note": version.note,
    }
    if text:
        found["text"] = version.text
        found["provenance"] = dict(version.provenance)
    return found
