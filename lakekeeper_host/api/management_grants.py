"""Management API: Lakekeeper's Grants API, another view of the permissions API's assignments.

``GET /grants/grantable-privileges`` (the vocabulary), ``GET /grants?principalUser=|principalRole=``
and, per resource (server, project, warehouse, namespace, table, view, generic table),
``GET .../grants``, ``POST .../grants`` and ``GET .../grants/grantable-privileges``. The logic is in
:mod:`lakekeeper_host.server.management.grants`.
"""

from __future__ import annotations

from quart import Blueprint, request

from lakekeeper_host.api.common import empty, json_body, json_response, metadata, query_int, state
from lakekeeper_host.server.management import grants, permissions

blueprint = Blueprint("management_grants", __name__, url_prefix="/management/v1")

# endpoint prefix -> (URL rule of the resource, kind, name of its id argument, name of its warehouse argument)
GRANT_OBJECTS: dict[str, tuple[str, str, str | None, str | None]] = {
    "server": ("/server", "server", None, None),
    "project": ("/project", "project", None, None),
    "warehouse": ("/warehouse/<warehouse_id>", "warehouse", "warehouse_id", None),
    "namespace": ("/warehouse/<warehouse_id>/namespace/<namespace_id>", "namespace", "namespace_id", "warehouse_id"),
    "table": ("/warehouse/<warehouse_id>/table/<table_id>", "table", "table_id", "warehouse_id"),
    "view": ("/warehouse/<warehouse_id>/view/<view_id>", "view", "view_id", "warehouse_id"),
    "generic_table": (
        "/warehouse/<warehouse_id>/generic-table/<generic_table_id>",
        "generic_table",
        "generic_table_id",
        "warehouse_id",
    ),
}


@blueprint.get("/grants/grantable-privileges")
async def grantable_privileges():
    """Every privilege the authorizer can grant, with its level, category and description"""
    return json_response({"privileges": grants.vocabulary(state())})


@blueprint.get("/grants")
async def list_principal_grants():
    """Everything one principal holds in the project (not available: 501 GrantListingNotImplemented)"""
    found = grants.list_principal_grants(
        state(), metadata(), request.args.get("principalUser"), request.args.get("principalRole")
    )
    return json_response({"grants": found, "next-page-token": None})


def _register(endpoint: str, rule: str, kind: str, id_arg: str | None, warehouse_arg: str | None) -> None:
    async def resolve(args: dict[str, str]):
        return await permissions.resolve(
            state(),
            metadata(),
            kind,
            args.get(id_arg) if id_arg else None,
            args.get(warehouse_arg) if warehouse_arg else None,
        )

    async def list_grants(**args):
        """A page of the direct grants on the resource (principalUser / principalRole narrow them)"""
        found, next_token = await grants.list_grants(
            state(),
            metadata(),
            await resolve(args),
            request.args.get("principalUser"),
            request.args.get("principalRole"),
            page_token=request.args.get("pageToken"),
            size=query_int("pageSize"),
        )
        return json_response({"grants": found, "next-page-token": next_token})

    async def apply_grants(**args):
        """Grant (writes) and revoke (deletes) privileges on the resource, at most 100, atomically"""
        body = await json_body()
        await grants.apply_grants(state(), metadata(), await resolve(args), body)
        return empty(204)

    async def grantable(**args):
        """Every privilege of the resource's level, each marked allowed when the caller may grant it"""
        found = await grants.grantable_privileges(
            state(),
            metadata(),
            await resolve(args),
            request.args.get("principalUser"),
            request.args.get("principalRole"),
        )
        return json_response({"privileges": found})

    blueprint.add_url_rule(f"{rule}/grants", f"{endpoint}_grants", list_grants, methods=["GET"])
    blueprint.add_url_rule(f"{rule}/grants", f"{endpoint}_apply_grants", apply_grants, methods=["POST"])
    blueprint.add_url_rule(
        f"{rule}/grants/grantable-privileges", f"{endpoint}_grantable_privileges", grantable, methods=["GET"]
    )


for _endpoint, (_rule, _kind, _id_arg, _warehouse_arg) in GRANT_OBJECTS.items():
    _register(_endpoint, _rule, _kind, _id_arg, _warehouse_arg)
