"""Management API ``/management/v1/permissions/...``: my access, assignments, managed access, check.

Lakekeeper's paths: ``server``, ``project`` (the ``x-project-id``/default project) and
``project/{project_id}``, ``warehouse/{warehouse_id}``, ``namespace/{namespace_id}``,
``warehouse/{warehouse_id}/table/{table_id}``, ``.../view/{view_id}`` and
``.../generic-table/{generic_table_id}`` (also ``table/{table_id}`` and ``view/{view_id}``, the older
form), ``role/{role_id}``; then ``/access`` and ``/assignments``.
"""

from __future__ import annotations

from collections.abc import Callable

from quart import Blueprint, request

from lakekeeper_host.api.common import empty, json_body, json_response, metadata, state
from lakekeeper_host.server.management import permissions

blueprint = Blueprint("management_permissions", __name__, url_prefix="/management/v1/permissions")

# endpoint name -> (URL rule of the object, kind, name of its id argument, name of its warehouse argument)
OBJECTS: dict[str, tuple[str, str, str | None, str | None]] = {
    "server": ("/server", "server", None, None),
    "project": ("/project", "project", None, None),
    "project_by_id": ("/project/<project_id>", "project", "project_id", None),
    "warehouse": ("/warehouse/<warehouse_id>", "warehouse", "warehouse_id", None),
    "namespace": ("/namespace/<namespace_id>", "namespace", "namespace_id", None),
    "table": ("/warehouse/<warehouse_id>/table/<table_id>", "table", "table_id", "warehouse_id"),
    "table_by_id": ("/table/<table_id>", "table", "table_id", None),
    "view": ("/warehouse/<warehouse_id>/view/<view_id>", "view", "view_id", "warehouse_id"),
    "view_by_id": ("/view/<view_id>", "view", "view_id", None),
    "generic_table": ("/warehouse/<warehouse_id>/generic-table/<generic_table_id>", "generic_table",
                      "generic_table_id", "warehouse_id"),
    "role": ("/role/<role_id>", "role", "role_id", None),
}
PERMISSION_OBJECTS = tuple(OBJECTS)
PERMISSION_MANAGED_ACCESS = tuple(name for name, (_, kind, _, _) in OBJECTS.items()
                                  if kind in permissions.MANAGED_ACCESS_KINDS)


def _resolver(kind: str, id_arg: str | None, warehouse_arg: str | None) -> Callable:
    async def resolve(args: dict[str, str]):
        return await permissions.resolve(
            state(), metadata(), kind, args.get(id_arg) if id_arg else None,
            args.get(warehouse_arg) if warehouse_arg else None,
        )

    return resolve


def _register(endpoint: str, rule: str, kind: str, id_arg: str | None, warehouse_arg: str | None) -> None:
    resolve = _resolver(kind, id_arg, warehouse_arg)

    async def get_access(**args):
        """What the caller (or principalUser / principalRole) may do on the object"""
        principal = permissions.principal_from_query(request.args.get("principalUser"),
                                                     request.args.get("principalRole"))
        actions = await permissions.get_access(state(), metadata(), await resolve(args), principal)
        return json_response({"allowed-actions": actions})

    async def get_assignments(**args):
        """The grants on the object (needs read_assignments)"""
        relations = [r for value in request.args.getlist("relations") for r in value.split(",") if r]
        found = await permissions.get_assignments(state(), metadata(), await resolve(args), relations)
        return json_response({"assignments": found})

    async def update_assignments(**args):
        """Grant (writes) and revoke (deletes) relations on the object"""
        body = await json_body()
        await permissions.update_assignments(state(), metadata(), await resolve(args), body)
        return empty(204)

    blueprint.add_url_rule(f"{rule}/access", f"{endpoint}_access", get_access, methods=["GET"])
    blueprint.add_url_rule(f"{rule}/assignments", f"{endpoint}_assignments", get_assignments, methods=["GET"])
    blueprint.add_url_rule(f"{rule}/assignments", f"{endpoint}_update_assignments", update_assignments,
                           methods=["POST"])
    if kind not in permissions.MANAGED_ACCESS_KINDS:
        return

    async def get_managed_access(**args):
        """Whether managed access is on (and, for a namespace, inherited)"""
        return json_response(await permissions.get_managed_access(state(), metadata(), await resolve(args)))

    async def set_managed_access(**args):
        """Turn managed access on or off (needs set_managed_access)"""
        body = await json_body()
        await permissions.set_managed_access(state(), metadata(), await resolve(args), body)
        return empty(200)

    # GET .../{id} is Lakekeeper's "auth properties"; GET .../managed-access the same answer
    blueprint.add_url_rule(rule, f"{endpoint}_properties", get_managed_access, methods=["GET"])
    blueprint.add_url_rule(f"{rule}/managed-access", f"{endpoint}_managed_access", get_managed_access,
                           methods=["GET"])
    blueprint.add_url_rule(f"{rule}/managed-access", f"{endpoint}_set_managed_access", set_managed_access,
                           methods=["POST"])


for _endpoint, (_rule, _kind, _id_arg, _warehouse_arg) in OBJECTS.items():
    _register(_endpoint, _rule, _kind, _id_arg, _warehouse_arg)


@blueprint.post("/check")
async def check():
    """Whether a user, a role or the caller may perform an action on an object"""
    allowed = await permissions.check(state(), metadata(), await json_body())
    return json_response({"allowed": allowed})
