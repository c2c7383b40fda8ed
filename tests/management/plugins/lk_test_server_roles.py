"""Test-only authorizer ``test-server-roles``: remembers who bootstrapped the server, and as what.

A miniature of Lakekeeper's OpenFGA model for the server object: the bootstrapping principal
becomes the server ``admin`` (server-level actions such as creating projects), or its
``operator`` (``is-operator``: also every project's admin). Everyone else is denied everything.
Roles live in this process's memory; that is enough for one test server.
"""

from __future__ import annotations

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec
from lakekeeper_host.service.authz import Actor, AuthorizerBase, Resource


class ServerRolesAuthorizer(AuthorizerBase):
    name = "test-server-roles"

    def __init__(self) -> None:
        self.server_roles: dict[str, str] = {}

    async def bootstrap(self, actor: Actor, is_operator: bool) -> None:
        if actor.user_id is not None:
            self.server_roles[actor.user_id] = "operator" if is_operator else "admin"

    async def is_allowed(self, actor: Actor, action: str, resource: Resource) -> bool:
        role = self.server_roles.get(actor.user_id or "")
        if resource.kind == "server":
            return role is not None
        return role == "operator"


async def _build(config, ctx) -> ServerRolesAuthorizer:
    return ServerRolesAuthorizer()


@hookimpl
def lakekeeper_authorizers():
    return [BackendSpec(name="test-server-roles", factory=_build)]
