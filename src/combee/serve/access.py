"""Who may call which of the gateway's routes: two roles, each with a token of its own.

- **Agent routes** (chat completions, models, feedback) take the agent token when one is set,
  and the operator token too; without an agent token they take anyone.
- **Operator routes** (a learning round now, rollback, the playbook versions) take the operator
  token; the agent token gets 403. Without an operator token they are closed (403), unless
  ``open_operator_routes`` opens them: then they take whoever the agent routes take.
- **Feedback text** is trusted (as a task's checker is) only when it comes with the operator
  token; from anyone else it is untrusted data.

Tokens are compared in constant time, and never logged or stored.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass, field
from typing import Literal

from starlette.requests import Request
from starlette.responses import Response

from combee.errors import ConfigError
from combee.serve.http_errors import error

Role = Literal["operator", "agent", "anyone"]

_TO_OPEN = (
    "start the gateway with an operator token (--operator-token, or COMBEE_OPERATOR_TOKEN in "
    "its environment) and send it as Authorization: Bearer <operator token>; or, on a trusted "
    "single-user machine, start it with --open-operator-routes"
)


@dataclass(frozen=True)
class Access:
    """The gateway's tokens and whether its operator routes are open (see the module)."""

    agent_token: str | None = field(default=None, repr=False)
    operator_token: str | None = field(default=None, repr=False)
    open_operator_routes: bool = False

    def __post_init__(self) -> None:
        for name in ("agent_token", "operator_token"):
            value = getattr(self, name)
            if value is None:
                continue
            if not value.strip():
                object.__setattr__(self, name, None)  # an empty variable sets no token
            elif any(char.isspace() for char in value):
                raise ConfigError("must be one word, without spaces", setting=name)
        if self.operator_token is not None and self.operator_token == self.agent_token:
            raise ConfigError(
                "is the agent token too: give the operator a token of its own",
                setting="operator_token",
            )
        if self.operator_token is not None and self.open_operator_routes:
            raise ConfigError(
                "and an operator token exclude each other: the operator routes either take "
                "the operator token or are open; drop one of them",
                setting="open_operator_routes",
            )

    def role(self, request: Request) -> Role:
        """Whose token ``request`` carries (``anyone``: none of this gateway's)."""
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        sent = given.strip().encode() if scheme.lower() == "bearer" else b""
        if self.operator_token is not None and hmac.compare_digest(
            sent, self.operator_token.encode()
        ):
            return "operator"
        if self.agent_token is not None and hmac.compare_digest(sent, self.agent_token.encode()):
            return "agent"
        return "anyone"

    def agent_refusal(self, request: Request) -> Response | None:
        """The 401 for a request an agent route does not take (None: taken)."""
        if self.agent_token is None or self.role(request) != "anyone":
            return None
        return error(401, "this gateway needs the agent token: Authorization: Bearer <agent token>")

    def operator_refusal(self, request: Request) -> Response | None:
        """The 401 or 403 for a request an operator route does not take (None: taken)."""
        route = f"{request.method} {request.url.path}"
        if self.operator_token is None:
            if self.open_operator_routes:
                return self.agent_refusal(request)
            return error(
                403, f"{route} is an operator route, closed on this gateway: {_TO_OPEN}",
                kind="permission_error",
            )  # fmt: skip
        role = self.role(request)
        if role == "operator":
            return None
        if role == "agent":
            return error(
                403,
                f"{route} is an operator route: the agent token may not use it; send the "
                "operator token (Authorization: Bearer <operator token>)",
                kind="permission_error",
            )
        return error(
            401, f"{route} needs the operator token: Authorization: Bearer <operator token>"
        )

    def trusts_text_of(self, request: Request) -> bool:
        """Whether feedback text ``request`` sends is trusted: it carries the operator token."""
        return self.role(request) == "operator"

    def summary(self) -> str:
        """One line on who may do what, for the gateway's start (no token in it)."""
        agents = "agent token" if self.agent_token is not None else "anyone"
        if self.operator_token is not None:
            operators = "operator token"
        elif self.open_operator_routes:
            operators = f"open to {agents} (--open-operator-routes)"
        else:
            operators = "closed (no operator token)"
        trusted = "with the operator token" if self.operator_token else "never (no operator token)"
        return (
            f"chat and feedback: {agents}; learn, rollback, playbook: {operators}; "
            f"feedback text trusted: {trusted}"
        )
