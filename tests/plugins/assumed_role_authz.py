"""Test-only authorizer ``assumed-role-only``: catalog objects only for callers acting as one role.

Actions on warehouses, namespaces, tables and views are allowed only when the ``Actor`` the
authorizer is asked about carries an ``assumed_role`` (set from the ``x-assume-role`` header)
and that role is named ``catalog-user``; looking the id up proves the authorizer got the very
role the caller named. Everything else (server, project, roles, users) is allowed, so a test
can create the roles it then assumes. The host answers a denied object the caller may not see
(no ``get_metadata``) as missing: 404.
"""

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec, BuildContext
from lakekeeper_host.service.authz import Actor, AuthorizerBase, Resource
from lakekeeper_host.store import roles as role_store

GATED_KINDS = frozenset({"warehouse", "namespace", "table", "view"})
ROLE_NAME = "catalog-user"


class AssumedRoleOnly(AuthorizerBase):
    name = "assumed-role-only"

    def __init__(self, db):
        self.db = db

    async def is_allowed(self, actor: Actor, action: str, resource: Resource) -> bool:
        if resource.kind not in GATED_KINDS:
            return True
        if actor.assumed_role is None:
            return False
        role = await role_store.get_role(self.db, actor.assumed_role)
        return role is not None and role.name == ROLE_NAME


@hookimpl
def lakekeeper_authorizers():
    async def build(config, ctx: BuildContext):
        return AssumedRoleOnly(ctx.db)

    return [BackendSpec(name="assumed-role-only", factory=build)]
