"""Roles of a project and their membership graph (users in roles, roles in roles).

Data only: who may manage roles is the authorizer's decision (AUTHZ sections ask it). The
graph stays acyclic and no chain of role-in-role edges is longer than
``LAKEKEEPER__ROLE__MAX_NESTING_DEPTH`` (default 10): both are checked under a per-project lock
in the same transaction as the insert, so concurrent requests cannot race a cycle in.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from attrs import evolve, frozen

from lakekeeper_host.errors import CatalogError, bad_request, conflict, not_found
from lakekeeper_host.ids import new_id
from lakekeeper_host.serde import iso_timestamp
from lakekeeper_host.server.authorize import authorize, created, deleted, role_members_changed, visible_page
from lakekeeper_host.server.management.users import (
    SEARCH_LIMIT,
    SEARCH_MAX_CHARS,
    decode_page_token,
    encode_page_token,
    keyset_after,
    page_size,
    rank_matches,
    require_allowed,
    validate_user_id,
)
from lakekeeper_host.server.resolve import resolve_project_id
from lakekeeper_host.service.authz import Actor, Resource
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import projects as project_store
from lakekeeper_host.store import roles as role_store
from lakekeeper_host.store import users as user_store
from lakekeeper_host.store.roles import MemberRow, RoleRow

if TYPE_CHECKING:
    from lakekeeper_host.service.request import RequestMetadata

LAKEKEEPER_PROVIDER = "lakekeeper"
SYSTEM_PROVIDER = "system"
ROLE_SEPARATOR = "~"
MEMBER_TYPES = ("user", "role")


@frozen
class CreateRoleRequest:
    name: str
    description: str | None = None
    project_id: str | None = None
    provider_id: str | None = None
    source_id: str | None = None


@frozen
class UpdateRoleRequest:
    name: str
    description: str | None = None


@frozen
class UpdateRoleSourceSystemRequest:
    provider_id: str
    source_id: str


@frozen
class SearchRoleRequest:
    search: str
    project_id: str | None = None


@frozen
class RoleMemberRef:
    type: str
    id: str


@frozen
class AddRoleMembersRequest:
    members: list[RoleMemberRef]


# ---------------------------------------------------------------- JSON


def role_json(role: RoleRow) -> dict[str, Any]:
    return {
        "id": role.id,
        "ident": f"{role.provider_id}{ROLE_SEPARATOR}{role.source_id}",
        "provider-id": role.provider_id,
        "source-id": role.source_id,
        "name": role.name,
        "description": role.description,
        "project-id": role.project_id,
        "created-at": iso_timestamp(role.created_at),
        "updated-at": iso_timestamp(role.updated_at),
    }


def role_metadata_json(role: RoleRow) -> dict[str, Any]:
    full = role_json(role)
    return {k: full[k] for k in ("id", "ident", "provider-id", "source-id", "name", "project-id")}


def membership_json(role: RoleRow) -> dict[str, Any]:
    return {"id": role.id, "ident": f"{role.provider_id}{ROLE_SEPARATOR}{role.source_id}", "name": role.name}


def member_json(member: MemberRow) -> dict[str, Any]:
    if member.member_type == "user":
        return {
            "type": "user",
            "id": member.member_id,
            "name": member.name,
            "email": member.email,
            "user-type": member.user_type,
        }
    return {
        "type": "role",
        "id": member.member_id,
        "ident": f"{member.provider_id}{ROLE_SEPARATOR}{member.source_id}",
        "name": member.name,
    }


# ---------------------------------------------------------------- validation helpers


def parse_role_id(role_id: str) -> str:
    try:
        return str(uuid.UUID(role_id))
    except ValueError:
        raise bad_request(f"Invalid role id {role_id[:100]!r}: expected a UUID", "InvalidRoleId") from None


def _validate_name(name: str) -> str:
    if not name or not name.strip():
        raise bad_request("Role name cannot be empty", "EmptyRoleName")
    return name


def _validate_provider(provider_id: str, source_id: str) -> None:
    if provider_id == SYSTEM_PROVIDER:
        raise bad_request(
            "provider_id `system` is reserved for catalog-managed roles and cannot be used in "
            "role-management requests.",
            "RoleProviderIdReserved",
        )
    for value, field in ((provider_id, "provider-id"), (source_id, "source-id")):
        if not value or any(ord(c) < 33 for c in value) or len(value) > 256:
            raise bad_request(f"{field} must be a non-empty string without whitespace", "InvalidRoleIdentifier")
    if ROLE_SEPARATOR in provider_id:
        raise bad_request(f"provider-id must not contain {ROLE_SEPARATOR!r}", "InvalidRoleIdentifier")


def _project(state: AppState, meta: RequestMetadata, explicit: str | None = None) -> str:
    return resolve_project_id(state, meta.project_id, explicit)


async def _role_in_project(db, role_id: str, project_id: str) -> RoleRow:
    role = await role_store.get_role(db, parse_role_id(role_id), project_id)
    if role is None:
        raise _role_not_found(role_id, project_id)
    return role


def _role_not_found(role_id: str, project_id: str) -> CatalogError:
    return not_found(
        f"A role with id '{role_id}' does not exist in project with id '{project_id}'", "RoleNotFoundInProject"
    )


async def _conflict_for(db, project_id: str, name: str, provider_id: str, source_id: str, except_id: str | None = None):
    if await role_store.role_name_taken(db, project_id, name, except_id=except_id):
        return conflict(f"A role with name '{name}' already exists in project '{project_id}'", "RoleNameAlreadyExists")
    if await role_store.source_taken(db, project_id, provider_id, source_id, except_id=except_id):
        return conflict(
            f"A role with identifier '{provider_id}{ROLE_SEPARATOR}{source_id}' already exists in project "
            f"'{project_id}'",
            "RoleSourceIdConflict",
        )
    return None


# ---------------------------------------------------------------- roles CRUD


async def create_role(state: AppState, meta: RequestMetadata, body: CreateRoleRequest) -> RoleRow:
    # ---- VALIDATIONS ----
    _validate_name(body.name)
    if (body.provider_id is None) != (body.source_id is None):
        raise bad_request(
            "provider-id and source-id must be provided together, or both omitted", "InvalidRoleIdentifier"
        )
    project_id = _project(state, meta, body.project_id)
    role_id = new_id()
    provider_id = body.provider_id or LAKEKEEPER_PROVIDER
    source_id = body.source_id or role_id
    _validate_provider(provider_id, source_id)
    description = body.description or None

    # ---- AUTHZ ----
    await require_allowed(state, meta.actor, "create_role", Resource("project", project_id))

    # ---- BUSINESS LOGIC ----
    async with state.store.transaction() as tx:
        if await project_store.get_project(tx, project_id) is None:
            raise not_found(f"Project {project_id} does not exist", "ProjectNotFound")
        role = await role_store.create_role(tx, role_id, project_id, body.name, description, provider_id, source_id)
        if role is None:
            raise await _conflict_for(tx, project_id, body.name, provider_id, source_id) or conflict(
                "Role already exists", "RoleAlreadyExists"
            )
    await created(state, meta, "role", role.id, ("project", project_id))
    return role


async def get_role(state: AppState, meta: RequestMetadata, role_id: str) -> RoleRow:
    project_id = _project(state, meta)
    role = await _role_in_project(state.store, role_id, project_id)
    await authorize(state, meta, "read", "role", role.id, hidden=_role_not_found(role_id, project_id))
    return role


async def get_role_metadata(state: AppState, meta: RequestMetadata, role_id: str) -> RoleRow:
    """Reduced role information, across projects (for cross-project references)."""
    role = await role_store.get_role(state.store, parse_role_id(role_id))
    if role is None:
        raise not_found(f"A role with id '{role_id}' does not exist", "RoleNotFound")
    await require_allowed(state, meta.actor, "read_metadata", Resource("role", role.id))
    return role


async def list_roles(
    state: AppState,
    meta: RequestMetadata,
    *,
    page_token: str | None,
    size: int | None,
    role_ids: list[str] | None,
    source_ids: list[str] | None,
    provider_ids: list[str] | None,
    explicit_project: str | None = None,
) -> tuple[list[RoleRow], str | None]:
    # ---- VALIDATIONS ----
    project_id = _project(state, meta, explicit_project)
    after = keyset_after(page_token)
    limit = page_size(state, size)
    ids = [parse_role_id(r) for r in role_ids] if role_ids is not None else None
    # ---- AUTHZ ----
    await require_allowed(state, meta.actor, "list_roles", Resource("project", project_id))
    # ---- BUSINESS LOGIC ----
    async def fetch(key: tuple[int, str] | None, n: int, visible: frozenset[str] | None) -> list[RoleRow]:
        return await role_store.list_roles(
            state.store, project_id, role_ids=ids, source_ids=source_ids, provider_ids=provider_ids,
            after=key, limit=n, visible=visible,
        )

    rows, more = await visible_page(state, meta, fetch, lambda r: (r.created_at, r.id),
                                    lambda r: Resource("role", r.id), after=after, limit=limit, action="read",
                                    kind="role")
    next_token = encode_page_token(rows[-1].created_at, rows[-1].id) if more and rows else None
    return rows, next_token


async def search_roles(state: AppState, meta: RequestMetadata, body: SearchRoleRequest) -> list[RoleRow]:
    project_id = _project(state, meta, body.project_id)
    await require_allowed(state, meta.actor, "search_roles", Resource("project", project_id))
    text = body.search[:SEARCH_MAX_CHARS].strip()
    if not text:
        return []
    candidates = await role_store.search_roles(state.store, project_id, text, 500)
    return rank_matches(text, candidates, lambda r: (r.name, r.source_id, r.id))[:SEARCH_LIMIT]


async def update_role(state: AppState, meta: RequestMetadata, role_id: str, body: UpdateRoleRequest) -> RoleRow:
    # ---- VALIDATIONS ----
    _validate_name(body.name)
    project_id = _project(state, meta)
    # ---- AUTHZ + BUSINESS LOGIC ----
    async with state.store.transaction() as tx:
        role = await _role_in_project(tx, role_id, project_id)
        _refuse_system(role)
        await require_allowed(state, meta.actor, "update", Resource("role", role.id))
        if await role_store.role_name_taken(tx, project_id, body.name, except_id=role.id):
            raise conflict(
                f"A role with name '{body.name}' already exists in project '{project_id}'", "RoleNameAlreadyExists"
            )
        updated = await role_store.update_role(tx, project_id, role.id, body.name, body.description or None)
    assert updated is not None
    return updated


async def update_role_source_system(
    state: AppState, meta: RequestMetadata, role_id: str, body: UpdateRoleSourceSystemRequest
) -> RoleRow:
    _validate_provider(body.provider_id, body.source_id)
    project_id = _project(state, meta)
    async with state.store.transaction() as tx:
        role = await _role_in_project(tx, role_id, project_id)
        _refuse_system(role)
        await require_allowed(state, meta.actor, "update_source_system", Resource("role", role.id))
        if await role_store.source_taken(tx, project_id, body.provider_id, body.source_id, except_id=role.id):
            raise conflict(
                f"A role with identifier '{body.provider_id}{ROLE_SEPARATOR}{body.source_id}' already exists "
                f"in project '{project_id}'",
                "RoleSourceIdConflict",
            )
        updated = await role_store.update_source_system(tx, project_id, role.id, body.provider_id, body.source_id)
    assert updated is not None
    return updated


async def delete_role(state: AppState, meta: RequestMetadata, role_id: str) -> None:
    """Delete a role with its member assignments and its own memberships in other roles."""
    project_id = _project(state, meta)
    async with state.store.transaction() as tx:
        role = await _role_in_project(tx, role_id, project_id)
        _refuse_system(role)
        await require_allowed(state, meta.actor, "delete", Resource("role", role.id))
        await role_store.lock_memberships(tx, project_id)
        await role_store.delete_role(tx, project_id, role.id)
    state.store.caches.roles.forget(role.id)
    await deleted(state, "role", [role.id])


def _refuse_system(role: RoleRow) -> None:
    if role.provider_id == SYSTEM_PROVIDER:
        raise CatalogError(409, "SystemRoleImmutable", "System roles are managed by the catalog and cannot be changed")


# ---------------------------------------------------------------- the membership graph


class RoleGraph:
    """The role-in-role edges of one project (parent -> member roles)."""

    def __init__(self, edges: Iterable[tuple[str, str]]) -> None:
        self.children: dict[str, set[str]] = {}
        self.parents: dict[str, set[str]] = {}
        for parent, child in edges:
            self.add(parent, child)

    def add(self, parent: str, child: str) -> None:
        self.children.setdefault(parent, set()).add(child)
        self.parents.setdefault(child, set()).add(parent)

    def _reach(self, start: str, step: dict[str, set[str]]) -> list[str]:
        seen: dict[str, None] = {}
        frontier = [start]
        while frontier:
            nxt = []
            for node in frontier:
                for other in sorted(step.get(node, ())):
                    if other != start and other not in seen:
                        seen[other] = None
                        nxt.append(other)
            frontier = nxt
        return list(seen)

    def descendants(self, role_id: str) -> list[str]:
        return self._reach(role_id, self.children)

    def ancestors(self, role_id: str) -> list[str]:
        return self._reach(role_id, self.parents)

    def _longest(self, node: str, step: dict[str, set[str]], memo: dict[str, int]) -> int:
        if node not in memo:
            memo[node] = 1 + max((self._longest(n, step, memo) for n in step.get(node, ())), default=-1)
        return memo[node]

    def chain_through(self, parent: str, child: str) -> int:
        """Edges in the longest chain through a new ``parent -> child`` edge."""
        return self._longest(parent, self.parents, {}) + 1 + self._longest(child, self.children, {})


async def add_members(
    state: AppState, meta: RequestMetadata, role_id: str, body: AddRoleMembersRequest
) -> list[RoleMemberRef]:
    """Add users and roles to a role, all or nothing; present members are fine (idempotent)."""
    # ---- VALIDATIONS ----
    project_id = _project(state, meta)
    members: list[tuple[str, str]] = []
    for member in body.members:
        if member.type == "user":
            members.append(("user", validate_user_id(member.id)))
        elif member.type == "role":
            members.append(("role", parse_role_id(member.id)))
        else:
            raise bad_request(f"member type must be 'user' or 'role', got {member.type!r}", "InvalidRoleMemberType")
    members = list(dict.fromkeys(members))
    max_depth = state.settings.auth.role.max_nesting_depth

    async with state.store.transaction() as tx:
        role = await _role_in_project(tx, role_id, project_id)
        # ---- AUTHZ ----
        await require_allowed(state, meta.actor, "grant_assignee", Resource("role", role.id))
        # ---- BUSINESS LOGIC ----
        await role_store.lock_memberships(tx, project_id)
        user_ids = [m for t, m in members if t == "user"]
        if user_ids:
            known = {u.id for u in await user_store.list_users(tx, ids=user_ids, limit=len(user_ids))}
            for user_id in user_ids:
                if user_id not in known:
                    raise not_found(
                        f"User '{user_id}' does not exist; provision the user before assigning it to a role",
                        "RoleAssignmentUserNotFound",
                    )
        member_roles = [m for t, m in members if t == "role"]
        if member_roles:
            found = await role_store.roles_by_ids(tx, member_roles)
            graph = RoleGraph(await role_store.role_edges(tx, project_id))
            for member_id in member_roles:
                member_role = found.get(member_id)
                if member_role is None or member_role.project_id != project_id:
                    raise not_found(
                        f"A role with id '{member_id}' does not exist in project with id '{project_id}'",
                        "RoleNotFoundInProject",
                    )
                for endpoint in (role, member_role):
                    if endpoint.provider_id not in (LAKEKEEPER_PROVIDER, SYSTEM_PROVIDER):
                        raise bad_request(
                            f"Role '{endpoint.id}' is managed by provider '{endpoint.provider_id}' and is not "
                            "catalog-managed; only lakekeeper/system roles can participate in role membership edges",
                            "RoleNotManuallyAssignable",
                        )
                if member_id in graph.children.get(role.id, ()):
                    continue
                if member_id == role.id or role.id in graph.descendants(member_id):
                    raise conflict(
                        f"Adding role '{member_id}' as a member of role '{role.id}' would create a cycle in "
                        "the role membership graph",
                        "RoleMembershipCycle",
                    )
                if graph.chain_through(role.id, member_id) > max_depth:
                    raise conflict(
                        f"Adding role '{member_id}' as a member of role '{role.id}' would exceed the maximum "
                        f"role nesting depth of {max_depth} edges (LAKEKEEPER__ROLE__MAX_NESTING_DEPTH)",
                        "RoleMembershipDepthExceeded",
                    )
                graph.add(role.id, member_id)
        await role_store.add_members(tx, role.id, members)
    await role_members_changed(state, role.id, members, [])
    return [RoleMemberRef(t, m) for t, m in members]


async def remove_member(
    state: AppState, meta: RequestMetadata, role_id: str, member_type: str, member_id: str
) -> None:
    """Idempotent: removing a member that is not there succeeds."""
    if member_type not in MEMBER_TYPES:
        raise bad_request(f"member type must be 'user' or 'role', got {member_type!r}", "InvalidRoleMemberType")
    member_id = validate_user_id(member_id) if member_type == "user" else parse_role_id(member_id)
    project_id = _project(state, meta)
    async with state.store.transaction() as tx:
        role = await _role_in_project(tx, role_id, project_id)
        await require_allowed(state, meta.actor, "grant_assignee", Resource("role", role.id))
        await role_store.lock_memberships(tx, project_id)
        await role_store.remove_member(tx, role.id, member_type, member_id)
    await role_members_changed(state, role.id, [], [(member_type, member_id)])


def _page(items: list, token: str | None, size: int) -> tuple[list, str | None]:
    """Offset pages for the graph listings (computed in memory, bounded by the project's roles)."""
    offset = (decode_page_token(token, int) or (0,))[0]
    page = items[offset : offset + size]
    nxt = encode_page_token(offset + size) if offset + size < len(items) else None
    return page, nxt


async def list_members(
    state: AppState,
    meta: RequestMetadata,
    role_id: str,
    *,
    member_type: str | None,
    transitive: bool,
    page_token: str | None,
    size: int | None,
) -> tuple[list[MemberRow], str | None]:
    if member_type is not None and member_type not in MEMBER_TYPES:
        raise bad_request(f"type must be 'user' or 'role', got {member_type!r}", "InvalidRoleMemberType")
    project_id = _project(state, meta)
    role = await _role_in_project(state.store, role_id, project_id)
    if transitive:
        await require_allowed(state, meta.actor, "list_roles", Resource("project", project_id))
        graph = RoleGraph(await role_store.role_edges(state.store, project_id))
        below = graph.descendants(role.id)
        members = await role_store.list_members(state.store, [role.id, *below], member_type=member_type)
    else:
        await require_allowed(state, meta.actor, "read_assignments", Resource("role", role.id))
        members = await role_store.list_members(state.store, [role.id], member_type=member_type)
    return _page(members, page_token, page_size(state, size))


async def member_of(
    state: AppState, meta: RequestMetadata, role_id: str, *, transitive: bool, page_token: str | None, size: int | None
) -> tuple[list[RoleRow], str | None]:
    project_id = _project(state, meta)
    role = await _role_in_project(state.store, role_id, project_id)
    if transitive:
        await require_allowed(state, meta.actor, "list_roles", Resource("project", project_id))
        graph = RoleGraph(await role_store.role_edges(state.store, project_id))
        found = await role_store.roles_by_ids(state.store, graph.ancestors(role.id))
        roles = sorted(found.values(), key=lambda r: (r.created_at, r.id))
    else:
        await require_allowed(state, meta.actor, "read_assignments", Resource("role", role.id))
        roles = await role_store.roles_with_member(state.store, "role", role.id, project_id)
    return _page(roles, page_token, page_size(state, size))


async def user_roles(
    state: AppState, meta: RequestMetadata, user_id: str, *, transitive: bool, page_token: str | None, size: int | None
) -> tuple[list[RoleRow], str | None]:
    """Roles of the current project the user is in: directly, or also through nested roles."""
    validate_user_id(user_id)
    project_id = _project(state, meta)
    await require_allowed(state, meta.actor, "read_role_assignments", Resource("user", user_id))
    direct = await role_store.roles_with_member(state.store, "user", user_id, project_id)
    if not transitive:
        return _page(direct, page_token, page_size(state, size))
    graph = RoleGraph(await role_store.role_edges(state.store, project_id))
    ids: dict[str, None] = {r.id: None for r in direct}
    for r in direct:
        ids.update(dict.fromkeys(graph.ancestors(r.id)))
    found = await role_store.roles_by_ids(state.store, ids)
    roles = sorted(found.values(), key=lambda r: (r.created_at, r.id))
    return _page(roles, page_token, page_size(state, size))


# ---------------------------------------------------------------- x-assume-role


async def resolve_assumed_role(state: AppState, actor: Actor, header_value: str) -> Actor:
    """The actor acting as the role named by ``x-assume-role`` (400 if it is not a known role).

    Whether the principal may assume it is the authorizer's decision.
    """
    try:
        role_id = str(uuid.UUID(header_value.strip()))
    except ValueError:
        raise bad_request(
            "Failed to parse Role-ID in header x-assume-role: expected a UUID", "InvalidRoleIdError"
        ) from None
    known = state.store.caches.roles
    if known.get(role_id) is None:
        if await role_store.get_role(state.store, role_id) is None:
            raise bad_request(
                f"Failed to resolve role with id {role_id} presented in header x-assume-role", "InvalidAssumeRoleId"
            )
        known.put(role_id, True)
    return evolve(actor, assumed_role=role_id)
