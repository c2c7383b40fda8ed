"""Per-request authentication: the HTTP side of ``server/authn.py``.

``create_app``'s ``before_request`` awaits the callable built here: it verifies the bearer
token, resolves ``x-assume-role``, puts the ``Actor`` on ``g.actor`` and registers users on
their first ``GET /catalog/v1/config``. Health and API docs stay open.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from quart import g, request

from lakekeeper_host.server import roles, users
from lakekeeper_host.server.authn import Authenticator
from lakekeeper_host.service.state import AppState

OPEN_PATHS = ("/health", "/swagger-ui", "/api-docs")
CONFIG_PATH = "/catalog/v1/config"


def is_open(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in OPEN_PATHS)


def request_authenticator(app_state: AppState) -> Callable[[], Awaitable[None]] | None:
    """The ``before_request`` step, or None when no identity provider is configured."""
    authenticator: Authenticator | None = app_state.extras.get("authenticator")
    if authenticator is None:
        return None
    read_only = app_state.settings.host.maintenance_mode == "read-only"

    async def authenticate() -> None:
        if request.method == "OPTIONS" or is_open(request.path):
            return
        actor = await authenticator.authenticate(request.headers.get("authorization"))
        assume = request.headers.get("x-assume-role")
        if assume:
            actor = await roles.resolve_assumed_role(app_state, actor, assume)
        g.actor = actor
        if request.method == "GET" and request.path.rstrip("/") == CONFIG_PATH and not read_only:
            await users.ensure_user_provisioned(app_state, actor)

    return authenticate
