"""The Grants API (``/management/v1/.../grants``): Lakekeeper's authorizer-independent view of grants.

A grant is one privilege held by one user or role on one resource. It is the same record the
permissions API calls an assignment (under OpenFGA: the same tuple), so this module reads and
writes through the authorizer's ``read_assignments``/``write_assignments`` and only changes the
JSON and the rules around them:

- reading a resource's grants needs ``read_assignments`` there, unless the caller narrows the list
  to itself (the user it is, or the role it assumed), which needs only seeing the resource;
- a write of at most 100 entries lands atomically; an unknown privilege is a 400 and one the caller
  may not grant a 403 (404 when it may not see the resource);
- the vocabulary (``grantable-privileges``) is the authorizer's: empty under allow-all, whose grant
  reads and writes answer 501 as the permissions API's do. Listing everything one principal holds
  (``GET /grants``) is a 501 under every authorizer here: OpenFGA indexes grants by object, and the
  allow-all authorizer keeps none.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.server.authorize import checking_actor
from lakekeeper_host.server.management.permissions import (
    principal_from_json,
    principal_from_query,
    require,
    require_visible,
    resource_json,
    resource_type,
    write_assignments,
)
from lakekeeper_host.server.pagination import decode_page_token, encode_page_token, page_size
from lakekeeper_host.service.authz import Assignment, Principal, PrivilegeDescriptor, Resource, grant_action
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState

GRANT_KINDS = ("server", "project", "warehouse", "namespace", "table", "view", "generic_table")
MAX_GRANT_CHANGES = 100


def privilege_json(privilege: PrivilegeDescriptor) -> dict[str, Any]:
    """A privilege as Lakekeeper's ``PrivilegeDescriptor`` spells it."""
    return {
        "name": privilege.name,
        "display-name": privilege.display_name,
        "description": privilege.description,
        "category": privilege.category,
    }


def vocabulary(state: AppState) -> dict[str, list[dict[str, Any]]]:
    """``GET /grants/grantable-privileges``: every level's privileges keyed by its resource type; each
    level is present, so an empty list says that nothing is grantable there."""
    return {resource_type(kind): [privilege_json(p) for p in state.authorizer.privileges(kind)] for kind in GRANT_KINDS}


def _acts_as(meta: RequestMetadata, principal: Principal) -> bool:
    """The request acts as ``principal``: the user itself, or the role it assumed (a role one merely
    belongs to is not oneself)."""
    actor = meta.actor
    if actor is None:
        return False
    if actor.assumed_role is not None:
        return principal == Principal("role", actor.assumed_role)
    return principal == Principal("user", actor.user_id or "")


async def _require_read(
    state: AppState,
    meta: RequestMetadata,
    resource: Resource,
    principal: Principal | None,
    *,
    everyone_may_ask_for_themselves: bool = False,
) -> None:
    """Reading about someone else needs ``read_assignments``; about oneself (named, or for
    grantable privileges also by naming nobody) only seeing the resource."""
    oneself = _acts_as(meta, principal) if principal is not None else everyone_may_ask_for_themselves
    if oneself:
        await require_visible(state, meta, resource)
    else:
        await require(state, meta, "read_assignments", resource)


def grant_json(assignment: Assignment, resource: Resource, recognized: bool) -> dict[str, Any]:
    # created-at: the authorizers here do not keep when a grant was made (Lakekeeper's field is optional)
    return {
        "principal": {assignment.principal.kind: assignment.principal.id},
        "resource": resource_json(resource),
        "privilege": assignment.relation,
        "recognized": recognized,
        "created-at": None,
    }


def _grant_order(assignment: Assignment) -> tuple[str, str, str]:
    return (assignment.principal.kind, assignment.principal.id, assignment.relation)


async def list_grants(
    state: AppState,
    meta: RequestMetadata,
    resource: Resource,
    user: str | None,
    role: str | None,
    *,
    page_token: str | None = None,
    size: int | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """``GET .../grants``: a page of the direct grants on the resource, optionally of one principal,
    and the token of the next page (None on the last). Pages follow (principal, privilege) order: the
    authorizer answers a resource's grants whole, so a page is a slice of them after the token's grant."""
    principal = principal_from_query(user, role)
    after = decode_page_token(page_token, str, str, str)
    limit = page_size(state, size)
    await _require_read(state, meta, resource, principal)
    found = sorted(
        (a for a in await state.authorizer.read_assignments(resource) if principal is None or a.principal == principal),
        key=_grant_order,
    )
    if after is not None:
        found = [a for a in found if _grant_order(a) > after]
    page = found[:limit]
    next_token = encode_page_token(*_grant_order(page[-1])) if len(found) > limit else None
    known = {p.name for p in state.authorizer.privileges(resource.kind)}
    return [grant_json(a, resource, a.relation in known) for a in page], next_token


def _parse_entries(state: AppState, kind: str, body: Any) -> tuple[list[Assignment], list[Assignment]]:
    if not isinstance(body, dict):
        raise bad_request('Invalid request body: expected {"writes": [...], "deletes": [...]}', "InvalidGrant")
    known = {p.name for p in state.authorizer.privileges(kind)}
    lists: list[list[Assignment]] = []
    for key in ("writes", "deletes"):
        items = body.get(key) or []
        if not isinstance(items, list):
            raise bad_request(f"Invalid request body: {key} must be a list", "InvalidGrant")
        entries: list[Assignment] = []
        for i, item in enumerate(items):
            where = f"{key}[{i}]"
            if not isinstance(item, dict) or not isinstance(item.get("privilege"), str) or not item["privilege"]:
                raise bad_request(f"Invalid request body: {where}.privilege must name a privilege", "InvalidGrant")
            # an authorizer without grants has no vocabulary: its write answers 501 below
            if known and item["privilege"] not in known:
                raise bad_request(
                    f"{item['privilege'][:100]!r} is not a grantable privilege on a "
                    f"{resource_type(kind)}; one of: {', '.join(sorted(known))}",
                    "InvalidGrantPrivilege",
                )
            entry = Assignment(item["privilege"], principal_from_json(item.get("principal"), f"{where}.principal"))
            if entry not in entries:  # granting twice is one grant
                entries.append(entry)
        lists.append(entries)
    writes, deletes = lists
    if len(writes) + len(deletes) > MAX_GRANT_CHANGES:
        raise bad_request(
            f"At most {MAX_GRANT_CHANGES} grant changes per request, writes and deletes together; "
            f"got {len(writes) + len(deletes)}",
            "TooManyGrantChanges",
        )
    both = [e for e in writes if e in deletes]
    if both:
        raise bad_request(
            f"{both[0].relation!r} for {both[0].principal.kind} {both[0].principal.id!r} is both "
            "granted and revoked in one request",
            "InvalidGrant",
        )
    return writes, deletes


async def apply_grants(state: AppState, meta: RequestMetadata, resource: Resource, body: Any) -> None:
    """``POST .../grants``: grant ``writes`` and revoke ``deletes`` in one step. The authorizer checks
    that the caller may grant each privilege (no instance-admin bypass: handing out rights always
    goes through the authorizer)."""
    # visibility first: a hidden object answers 404 whatever the body, as a missing one does
    await require_visible(state, meta, resource)
    writes, deletes = _parse_entries(state, resource.kind, body)
    await write_assignments(state, meta, resource, writes, deletes)


async def grantable_privileges(
    state: AppState, meta: RequestMetadata, resource: Resource, user: str | None, role: str | None
) -> list[dict[str, Any]]:
    """``GET .../grants/grantable-privileges``: every privilege of the resource's level, each
    ``allowed`` when the caller (or the named principal, which needs ``read_assignments``) may grant it."""
    principal = principal_from_query(user, role)
    if principal is not None and _acts_as(meta, principal):
        principal = None  # asking about oneself
    await _require_read(state, meta, resource, principal, everyone_may_ask_for_themselves=True)
    privileges = list(state.authorizer.privileges(resource.kind))
    actions = sorted({grant_action(resource.kind, p.name) for p in privileges})
    if principal is not None:
        allowed = set(await state.authorizer.principal_allowed_actions(principal, resource, actions))
    else:
        actor = checking_actor(state, meta)
        if actor is None:
            allowed = set(actions)
        else:
            decisions = await asyncio.gather(*(state.authorizer.is_allowed(actor, a, resource) for a in actions))
            allowed = {a for a, ok in zip(actions, decisions, strict=True) if ok}
    return [
        {"privilege": privilege_json(p), "allowed": grant_action(resource.kind, p.name) in allowed}
        for p in privileges
    ]


def list_principal_grants(
    state: AppState,
    meta: RequestMetadata,
    user: str | None,
    role: str | None,
) -> list[dict[str, Any]]:
    """``GET /grants?principalUser=|principalRole=``: everything one principal holds in a project.
    Lakekeeper answers it from grants kept in the catalog database; every authorizer here keeps them
    elsewhere (OpenFGA indexes them by object) or keeps none, so the answer is always 501."""
    if principal_from_query(user, role) is None:
        raise bad_request("Name the principal: principalUser or principalRole", "MissingGrantPrincipal")
    keeps = (
        "indexes grants by resource" if any(state.authorizer.privileges(k) for k in GRANT_KINDS) else "keeps no grants"
    )
    raise CatalogError(
        501,
        "GrantListingNotImplemented",
        f"The authorizer {state.authorizer.name!r} {keeps}, so it cannot list everything one "
        "principal holds; read each resource's grants from GET .../grants instead",
    )
