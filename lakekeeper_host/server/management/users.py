"""Users: provisioning (by an admin, self-service from the token, implicitly on ``GET /config``),
listing, search, replace, delete, ``whoami``.

Data only: the AUTHZ sections ask the configured authorizer (allow-all by default); which
principal may do what is the authorizer's business. Lakekeeper's rules, which the ``openfga``
authorizer answers: listing every user (``GET /user``) needs ``list_users`` on the server (403
otherwise, never a partial list); reading one user by id (``GET /user/{id}``) and searching
(``POST /search/user``) are open to every authenticated caller, so grant dialogs can show names;
search answers only users the caller may ``read``, and a user the caller may not ``read`` is the
same 404 as a missing one.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from attrs import frozen

from lakekeeper_host.errors import CatalogError, action_forbidden, bad_request, conflict, forbidden, not_found
from lakekeeper_host.serde import iso_timestamp
from lakekeeper_host.server.authorize import (
    actor_allowed,
    authorize,
    checking_actor,
    deleted,
    is_instance_admin,
    visible,
)
from lakekeeper_host.server.pagination import decode_page_token, encode_page_token, page_size
from lakekeeper_host.server.security.authn import IDP_SEPARATOR, MAX_SUBJECT_LENGTH, principal_type
from lakekeeper_host.service.authz import Actor, Resource
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import users as user_store
from lakekeeper_host.store.users import UserRow

if TYPE_CHECKING:
    from lakekeeper_host.service.request import RequestMetadata

log = logging.getLogger(__name__)

USER_TYPES = ("human", "application")
SEARCH_LIMIT = 10
SEARCH_MAX_CHARS = 64
# users seen by this process recently: skip the INSERT on every /config call
_PROVISIONED_TTL_SECONDS = 120.0
_PROVISIONED_MAX = 10_000


@frozen
class CreateUserRequest:
    update_if_exists: bool = False
    name: str | None = None
    email: str | None = None
    user_type: str | None = None
    id: str | None = None


@frozen
class UpdateUserRequest:
    name: str
    user_type: str
    email: str | None = None


@frozen
class SearchRequest:
    search: str


# ---------------------------------------------------------------- shared helpers (users and roles)


def keyset_after(token: str | None) -> tuple[int, str] | None:
    """The (created_at, id) cursor of a users/roles page token."""
    return decode_page_token(token, int, str)


async def require_allowed(state: AppState, actor: Actor | None, action: str, resource: Resource) -> None:
    if actor is None or getattr(state.authorizer, "allows_all", False):
        return
    if not await actor_allowed(state, actor, action, resource):
        raise action_forbidden(resource.kind, action, resource.id)


def validate_user_id(user_id: str) -> str:
    """``<idp-id>~<subject>`` with a non-empty idp id and a sane subject (400 otherwise)."""
    idp, sep, subject = user_id.partition(IDP_SEPARATOR)
    if not sep or not idp or not subject:
        raise bad_request(
            f"Invalid user id: `{user_id[:200]}`. Expected format: `<idp_id>~<user-id>`", "InvalidUserId"
        )
    if len(subject) >= MAX_SUBJECT_LENGTH:
        raise bad_request("user id must be shorter than 128 chars", "UserIdTooLongError")
    if any(ord(c) < 32 or ord(c) == 127 for c in user_id):
        raise bad_request("User ID cannot contain control characters.", "InvalidUserIdError")
    return user_id


def _validate_user_type(user_type: str) -> str:
    if user_type not in USER_TYPES:
        raise bad_request(f"user-type must be 'human' or 'application', got {user_type!r}", "InvalidUserType")
    return user_type


def user_json(user: UserRow) -> dict[str, Any]:
    return {
        "id": user.id,
        "name": user.name,
        "email": user.email,
        "user-type": user.user_type,
        "last-updated-with": user.last_updated_with,
        "created-at": iso_timestamp(user.created_at),
        "updated-at": iso_timestamp(user.updated_at),
    }


def search_user_json(user: UserRow) -> dict[str, Any]:
    return {"id": user.id, "name": user.name, "user-type": user.user_type, "email": user.email}


def nameless_user(user_id: str) -> str:
    return f"Nameless App with ID {user_id}"


def _server_resource(state: AppState) -> Resource:
    return Resource("server", state.server_id or "")


# ---------------------------------------------------------------- provisioning


async def create_user(state: AppState, meta: RequestMetadata, body: CreateUserRequest) -> tuple[UserRow, bool]:
    """``POST /user``: self-registration (no id, or the caller's own id) or provisioning by id.

    Returns (user, created); an existing user is a 409 unless ``update-if-exists``.
    """
    # ---- VALIDATIONS ----
    actor = meta.actor
    self_provision = actor.user_id is not None and (body.id is None or body.id == actor.user_id)
    user_id = body.id or actor.user_id
    if user_id is None:
        raise bad_request(
            "User ID could not be extracted from the token and must be provided for creating a user.",
            "MissingUserId",
        )
    validate_user_id(user_id)
    name = body.name or None
    email = body.email or None
    if body.user_type is not None:
        _validate_user_type(body.user_type)
    if self_provision:
        # provided values win, the token fills the gaps
        name = name or actor.name or nameless_user(user_id)
        email = email or actor.email
        user_type = body.user_type or principal_type(actor) or "application"
    else:
        if not name:
            raise bad_request("Name must be provided for user provisioning", "MissingUserName")
        if body.user_type is None:
            raise bad_request("Name and user_type must be provided for user provisioning", "MissingUserType")
        user_type = body.user_type

    # ---- AUTHZ ----
    if not self_provision:
        await require_allowed(state, actor, "provision_users", _server_resource(state))

    # ---- BUSINESS LOGIC ----
    async with state.store.transaction() as tx:
        existing = await user_store.get_user(tx, user_id)
        if existing is not None and not body.update_if_exists:
            raise conflict(f"User with id {user_id} already exists.", "UserAlreadyExists")
        user, created = await user_store.create_or_update_user(
            tx, user_id, name, email, user_type, "create-endpoint"
        )
    _remember(state, user_id)
    return user, created


async def ensure_user_provisioned(state: AppState, actor: Actor) -> None:
    """Register an authenticated caller on first sight (``GET /catalog/v1/config``).

    Lakekeeper does this even when the config call is then denied; an existing user is left
    as it is. Failures are logged, never turned into a failed config call.
    """
    if actor.user_id is None or _recently_seen(state, actor.user_id):
        return
    try:
        written = await user_store.insert_user_if_absent(
            state.store,
            actor.user_id,
            actor.name or nameless_user(actor.user_id),
            actor.email,
            principal_type(actor) or "application",
            "config-call-creation",
        )
    except Exception:  # registration is a side effect of /config; never fail the call for it
        log.exception("registering user %s failed", actor.user_id)
        return
    if written:
        log.info("registered user %s on first GET /config", actor.user_id)
    _remember(state, actor.user_id)


def _seen_cache(state: AppState) -> dict[str, float]:
    return state.provisioned_users


def _recently_seen(state: AppState, user_id: str) -> bool:
    expires = _seen_cache(state).get(user_id)
    return expires is not None and expires > time.monotonic()


def _remember(state: AppState, user_id: str) -> None:
    cache = _seen_cache(state)
    if len(cache) >= _PROVISIONED_MAX:
        cache.clear()
    cache[user_id] = time.monotonic() + _PROVISIONED_TTL_SECONDS


def _forget(state: AppState, user_id: str) -> None:
    _seen_cache(state).pop(user_id, None)


# ---------------------------------------------------------------- reads


async def get_user(state: AppState, meta: RequestMetadata, user_id: str) -> UserRow:
    # ---- VALIDATIONS ----
    validate_user_id(user_id)
    missing = not_found(f"User with id {user_id} not found.", "UserNotFound")
    # ---- AUTHZ ----
    await authorize(state, meta, "read", "user", user_id, hidden=missing)
    # ---- BUSINESS LOGIC ----
    user = await user_store.get_user(state.store, user_id)
    if user is None:
        raise missing
    return user


async def whoami(state: AppState, meta: RequestMetadata) -> dict[str, Any]:
    """The caller's user record plus ``is-instance-admin``; 401 without a token."""
    actor = meta.actor
    if actor.user_id is None:
        raise CatalogError(
            401,
            "GetMyUserWithoutToken",
            "No token provided: whoami needs an authenticated caller (authentication is "
            "disabled on this server, or the request carried no token)",
            headers={"WWW-Authenticate": "Bearer"},
        )
    user = await user_store.get_user(state.store, actor.user_id)
    if user is None:
        raise not_found(
            f"User with id {actor.user_id} not found. Users are registered on their first "
            "GET /catalog/v1/config or by POST /management/v1/user.",
            "UserNotFound",
        )
    return {**user_json(user), "is-instance-admin": is_instance_admin(state, actor)}


async def list_users(
    state: AppState, meta: RequestMetadata, *, name: str | None, page_token: str | None, size: int | None
) -> tuple[list[UserRow], str | None]:
    # ---- VALIDATIONS ----
    after = keyset_after(page_token)
    limit = page_size(state, size)
    # ---- AUTHZ ----
    # Lakekeeper: all users or none (403); a caller may still read themself (GET /user/{id}, whoami)
    await authorize(state, meta, "list_users", "server", _server_resource(state).id)
    # ---- BUSINESS LOGIC ----
    rows = await user_store.list_users(state.store, name=name, after=after, limit=limit + 1)
    next_token = None
    if len(rows) > limit:
        rows = rows[:limit]
        next_token = encode_page_token(rows[-1].created_at, rows[-1].id)
    return rows, next_token


async def search_users(state: AppState, meta: RequestMetadata, body: SearchRequest) -> list[UserRow]:
    """Best matches first: exact name/id/email, then prefix, then substring (64 chars at most)."""
    # ---- AUTHZ ----
    # Lakekeeper: every authenticated caller may search users (to pick whom to grant to)
    actor = checking_actor(state, meta)
    if actor is not None and actor.user_id is None:
        raise forbidden("Forbidden: searching users needs an authenticated caller")
    # ---- BUSINESS LOGIC ----
    text = body.search[:SEARCH_MAX_CHARS].strip()
    if not text:
        return []
    candidates = await user_store.search_users(state.store, text, 500)
    ranked = rank_matches(text, candidates, lambda u: (u.name, u.id, u.email or ""))
    # only users the caller may read (the openfga authorizer: all of them, as in Lakekeeper)
    readable = await visible(state, meta, ranked, lambda u: Resource("user", u.id), action="read")
    return readable[:SEARCH_LIMIT]


def rank_matches(text: str, items: list, fields) -> list:
    needle = text.casefold()

    def rank(item) -> int:
        values = [v.casefold() for v in fields(item) if v]
        if needle in values:
            return 0
        if any(v.startswith(needle) for v in values):
            return 1
        return 2

    return sorted(items, key=rank)


# ---------------------------------------------------------------- writes


async def update_user(state: AppState, meta: RequestMetadata, user_id: str, body: UpdateUserRequest) -> None:
    # ---- VALIDATIONS ----
    validate_user_id(user_id)
    if not body.name:
        raise bad_request("Name cannot be empty", "EmptyName")
    _validate_user_type(body.user_type)
    # ---- AUTHZ ----
    await require_allowed(state, meta.actor, "update", Resource("user", user_id))
    # ---- BUSINESS LOGIC ----
    async with state.store.transaction() as tx:
        updated = await user_store.update_user(tx, user_id, body.name, body.email or None, body.user_type)
    if updated is None:
        raise not_found("User does not exist", "UserNotFound")


async def delete_user(state: AppState, meta: RequestMetadata, user_id: str) -> None:
    """Soft delete: the user disappears with their role assignments; the id may come back."""
    # ---- VALIDATIONS ----
    validate_user_id(user_id)
    # ---- AUTHZ ----
    await require_allowed(state, meta.actor, "delete", Resource("user", user_id))
    # ---- BUSINESS LOGIC ----
    async with state.store.transaction() as tx:
        removed_from = await user_store.delete_user(tx, user_id)
    if removed_from is None:
        raise not_found(f"User with id {user_id} not found.", "UserNotFound")
    await deleted(state, "user", [user_id])
    _forget(state, user_id)
