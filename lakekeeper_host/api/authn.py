"""Per-request authentication: the HTTP side of ``server/authn.py``.

``create_app``'s ``before_request`` (and the read lane, ``api/reads.py``) awaits the callable
built here with the request's method, path and headers: it verifies the bearer token, resolves
``x-assume-role``, registers users on their first ``GET /catalog/v1/config`` and returns the
``Actor`` (None for open routes). Health and API docs stay open.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from lakekeeper_host.server import roles, users
from lakekeeper_host.server.authn import Authenticator
from lakekeeper_host.service.authz import Actor
from lakekeeper_host.service.state import AppState

OPEN_PATHS = ("/health", "/swagger-ui", "/api-docs")
CONFIG_PATH = "/catalog/v1/config"


def is_open(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in OPEN_PATHS)


Authenticate = Callable[[str, str, Mapping[str, str]], Awaitable[Actor | None]]


def request_authenticator(app_state: AppState) -> Authenticate | None:
    """``authenticate(method, path, headers) -> Actor | None``, or None when no identity
    provider is configured (requests are anonymous then)."""
    authenticator: Authenticator | None = app_state.extras.get("authenticator")
    if authenticator is None:
        return None
    read_only = app_state.settings.host.maintenance_mode == "read-only"

    async def authenticate(method: str, path: str, headers: Mapping[str, str]) -> Actor | None:
        if method == "OPTIONS" or is_open(path):
            return None
        actor = await authenticator.authenticate(headers.get("authorization"))
        assume = headers.get("x-assume-role")
        if assume:
            actor = await roles.resolve_assumed_role(app_state, actor, assume)
        if method == "GET" and path.rstrip("/") == CONFIG_PATH and not read_only:
            await users.ensure_user_provisioned(app_state, actor)
        return actor

    return authenticate
