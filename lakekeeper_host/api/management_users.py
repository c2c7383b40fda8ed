"""Management API ``/management/v1``: ``whoami``, users, roles and role membership."""

from __future__ import annotations

from quart import Blueprint, request

from lakekeeper_host.api.common import empty, json_body, json_response, metadata, query_int, state
from lakekeeper_host.serde import structure_body
from lakekeeper_host.server.management import roles, users

blueprint = Blueprint("management_users", __name__, url_prefix="/management/v1")


def _list_arg(name: str) -> list[str] | None:
    """``?roleIds=a&roleIds=b`` or ``?roleIds=a,b``; None when absent."""
    values = request.args.getlist(name)
    if not values:
        return None
    return [v for value in values for v in value.split(",") if v]


def _page_args() -> tuple[str | None, int | None]:
    return request.args.get("pageToken"), query_int("pageSize")


# ---------------------------------------------------------------- users


@blueprint.get("/whoami")
async def whoami():
    return json_response(await users.whoami(state(), metadata()))


@blueprint.post("/user")
async def create_user():
    raw = await request.get_data()
    body = structure_body(await json_body(), users.CreateUserRequest) if raw.strip() else users.CreateUserRequest()
    user, created = await users.create_user(state(), metadata(), body)
    return json_response(users.user_json(user), 201 if created else 200)


@blueprint.get("/user")
async def list_users():
    token, size = _page_args()
    rows, next_token = await users.list_users(
        state(), metadata(), name=request.args.get("name") or None, page_token=token, size=size
    )
    return json_response({"users": [users.user_json(u) for u in rows], "next-page-token": next_token})


@blueprint.post("/search/user")
async def search_user():
    body = structure_body(await json_body(), users.SearchRequest)
    rows = await users.search_users(state(), metadata(), body)
    return json_response({"users": [users.search_user_json(u) for u in rows]})


@blueprint.get("/user/<user_id>")
async def get_user(user_id: str):
    return json_response(users.user_json(await users.get_user(state(), metadata(), user_id)))


@blueprint.put("/user/<user_id>")
async def update_user(user_id: str):
    body = structure_body(await json_body(), users.UpdateUserRequest)
    await users.update_user(state(), metadata(), user_id, body)
    return empty(200)


@blueprint.delete("/user/<user_id>")
async def delete_user(user_id: str):
    await users.delete_user(state(), metadata(), user_id)
    return empty(204)


@blueprint.get("/user/<user_id>/roles")
async def get_user_roles(user_id: str):
    return await _user_roles(user_id, transitive=False)


@blueprint.get("/user/<user_id>/roles/transitive")
async def get_user_roles_transitive(user_id: str):
    return await _user_roles(user_id, transitive=True)


async def _user_roles(user_id: str, *, transitive: bool):
    token, size = _page_args()
    rows, next_token = await roles.user_roles(
        state(), metadata(), user_id, transitive=transitive, page_token=token, size=size
    )
    return json_response({"roles": [roles.membership_json(r) for r in rows], "next-page-token": next_token})


# ---------------------------------------------------------------- roles


@blueprint.post("/role")
async def create_role():
    body = structure_body(await json_body(), roles.CreateRoleRequest)
    role = await roles.create_role(state(), metadata(), body)
    return json_response(roles.role_json(role), 201)


@blueprint.get("/role")
async def list_roles():
    token, size = _page_args()
    rows, next_token = await roles.list_roles(
        state(),
        metadata(),
        page_token=token,
        size=size,
        role_ids=_list_arg("roleIds"),
        source_ids=_list_arg("sourceIds"),
        provider_ids=_list_arg("providerIds"),
        explicit_project=request.args.get("projectId") or None,
    )
    return json_response({"roles": [roles.role_json(r) for r in rows], "next-page-token": next_token})


@blueprint.post("/search/role")
async def search_role():
    body = structure_body(await json_body(), roles.SearchRoleRequest)
    rows = await roles.search_roles(state(), metadata(), body)
    return json_response({"roles": [roles.role_json(r) for r in rows]})


@blueprint.get("/role/<role_id>")
async def get_role(role_id: str):
    return json_response(roles.role_json(await roles.get_role(state(), metadata(), role_id)))


@blueprint.post("/role/<role_id>")
async def update_role(role_id: str):
    body = structure_body(await json_body(), roles.UpdateRoleRequest)
    return json_response(roles.role_json(await roles.update_role(state(), metadata(), role_id, body)))


@blueprint.delete("/role/<role_id>")
async def delete_role(role_id: str):
    await roles.delete_role(state(), metadata(), role_id)
    return empty(204)


@blueprint.put("/role/<role_id>/source-system")
async def update_role_source_system(role_id: str):
    body = structure_body(await json_body(), roles.UpdateRoleSourceSystemRequest)
    role = await roles.update_role_source_system(state(), metadata(), role_id, body)
    return json_response(roles.role_json(role))


@blueprint.get("/role/<role_id>/metadata")
async def get_role_metadata(role_id: str):
    return json_response(roles.role_metadata_json(await roles.get_role_metadata(state(), metadata(), role_id)))


# ---------------------------------------------------------------- membership


@blueprint.post("/role/<role_id>/members")
async def add_role_members(role_id: str):
    body = structure_body(await json_body(), roles.AddRoleMembersRequest)
    added = await roles.add_members(state(), metadata(), role_id, body)
    return json_response({"members": [{"type": m.type, "id": m.id} for m in added]})


@blueprint.get("/role/<role_id>/members")
async def list_role_members(role_id: str):
    return await _members(role_id, transitive=False)


@blueprint.get("/role/<role_id>/members/transitive")
async def list_role_members_transitive(role_id: str):
    return await _members(role_id, transitive=True)


async def _members(role_id: str, *, transitive: bool):
    token, size = _page_args()
    rows, next_token = await roles.list_members(
        state(),
        metadata(),
        role_id,
        member_type=request.args.get("type") or None,
        transitive=transitive,
        page_token=token,
        size=size,
    )
    return json_response({"members": [roles.member_json(m) for m in rows], "next-page-token": next_token})


@blueprint.delete("/role/<role_id>/members/<member_type>/<member_id>")
async def remove_role_member(role_id: str, member_type: str, member_id: str):
    await roles.remove_member(state(), metadata(), role_id, member_type, member_id)
    return empty(204)


@blueprint.get("/role/<role_id>/member-of")
async def list_member_of(role_id: str):
    return await _member_of(role_id, transitive=False)


@blueprint.get("/role/<role_id>/member-of/transitive")
async def list_member_of_transitive(role_id: str):
    return await _member_of(role_id, transitive=True)


async def _member_of(role_id: str, *, transitive: bool):
    token, size = _page_args()
    rows, next_token = await roles.member_of(
        state(), metadata(), role_id, transitive=transitive, page_token=token, size=size
    )
    return json_response({"roles": [roles.membership_json(r) for r in rows], "next-page-token": next_token})
