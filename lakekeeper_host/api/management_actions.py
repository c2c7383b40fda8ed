"""Management API: Lakekeeper's batch permission check and the per-object ``GET .../actions``.

``POST /action/batch-check`` answers many "may this user or role do that on this object" questions
in one request (the console, OPA bridges, Trino). The logic is in
:mod:`lakekeeper_host.server.management.batch_check`.
"""

from __future__ import annotations

from quart import Blueprint, request

from lakekeeper_host.api.common import json_body, json_response, metadata, state
from lakekeeper_host.server.management import batch_check as checks
from lakekeeper_host.server.management import permissions

blueprint = Blueprint("management_actions", __name__, url_prefix="/management/v1")


@blueprint.post("/action/batch-check")
async def batch_check():
    """Check up to 1,000 actions on servers, projects, warehouses, namespaces, tables and views"""
    results = await checks.batch_check(state(), metadata(), await json_body())
    return json_response({"results": results})


# GET .../actions: what the caller (or ?principalUser= / ?principalRole=) may do on one object --
# the same answer as /permissions/.../access, at the object's own management path
ACTION_OBJECTS: dict[str, tuple[str, str, str | None, str | None]] = {
    "server_actions": ("/server/actions", "server", None, None),
    "project_actions": ("/project/actions", "project", None, None),
    "warehouse_actions": ("/warehouse/<warehouse_id>/actions", "warehouse", "warehouse_id", None),
    "namespace_actions": ("/warehouse/<warehouse_id>/namespace/<namespace_id>/actions", "namespace",
                          "namespace_id", "warehouse_id"),
    "table_actions": ("/warehouse/<warehouse_id>/table/<table_id>/actions", "table", "table_id", "warehouse_id"),
    "view_actions": ("/warehouse/<warehouse_id>/view/<view_id>/actions", "view", "view_id", "warehouse_id"),
    "generic_table_actions": ("/warehouse/<warehouse_id>/generic-table/<generic_table_id>/actions", "generic_table",
                              "generic_table_id", "warehouse_id"),
    "role_actions": ("/role/<role_id>/actions", "role", "role_id", None),
}


def _register_actions(endpoint: str, rule: str, kind: str, id_arg: str | None, warehouse_arg: str | None) -> None:
    async def get_actions(**args):
        """The actions the caller (or principalUser / principalRole) may perform on the object"""
        principal = permissions.principal_from_query(request.args.get("principalUser"),
                                                     request.args.get("principalRole"))
        resource = await permissions.resolve(state(), metadata(), kind, args.get(id_arg) if id_arg else None,
                                             args.get(warehouse_arg) if warehouse_arg else None)
        actions = await permissions.get_access(state(), metadata(), resource, principal)
        return json_response({"allowed-actions": actions})

    blueprint.add_url_rule(rule, endpoint, get_actions, methods=["GET"])


for _endpoint, (_rule, _kind, _id_arg, _warehouse_arg) in ACTION_OBJECTS.items():
    _register_actions(_endpoint, _rule, _kind, _id_arg, _warehouse_arg)
