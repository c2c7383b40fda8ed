"""Idempotency-Key on mutating catalog operations (Iceberg REST spec; Lakekeeper §1.1, §4.9).

A client sends ``Idempotency-Key: <uuid>`` on a mutation and may retry it with the same key.
The first request *claims* the key (an in-flight record), runs, and *finalizes* the record with
its outcome; a retry within the lifetime gets that outcome back without the change running again.

* A key belongs to the caller who used it (the principal, and the role it acts as): another
  caller's request under the same key is a request of its own, neither answered with the first
  caller's response nor blocked by it. A record is bound to the operation, the route (method and
  raw path) and a fingerprint of the request (query string and canonical JSON body).
* A replay is authorized first: the caller must still pass the operation's own check on the
  objects that still exist (:func:`authorize_replay`); a refusal answers instead of the replay.
* 2xx and deterministic 4xx outcomes are finalized and replayed (status, body, ``ETag``).
  Authentication/rate-limit answers (401, 403, 408, 419, 429) and 5xx are not: the record is
  released and a retry runs the operation.
* The same key on a different operation or route is ``400 IdempotencyKeyReused``; on the same
  route with a different request ``422 UnprocessableEntityException`` (the IETF Idempotency-Key
  draft: a key must not be reused with another payload); while the first request still runs, a
  duplicate is ``409 RequestInProgress``. An in-flight record older than twice the request timeout
  is treated as abandoned (its process died) and taken over.
* ``LAKEKEEPER__IDEMPOTENCY__LIFETIME`` (``PT30M``) is advertised in ``/config`` as
  ``idempotency-key-lifetime``; it counts from finalization. A finalized record older than that
  is ignored (the key is fresh again) and removed by the cleanup loop after lifetime + grace.
* Vended credentials are never stored: replayed bodies carry no ``storage-credentials`` and no
  secret ``config`` keys.

The claim is a separate transaction from the mutation (the wrapper does not reach into the
operation's own transaction). If a process dies between committing the change and finalizing the
record, the key stays in flight until it is abandoned; the retry then runs again and gets the
operation's own answer for an already-applied change (e.g. 409 already exists).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import uuid
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl

from lakekeeper_host.config.types import format_duration
from lakekeeper_host.errors import CatalogError, bad_request, no_such_namespace
from lakekeeper_host.server.authorize import authorize, authorize_warehouse, checking_actor
from lakekeeper_host.server.names import parse_name_path, parse_namespace_path
from lakekeeper_host.server.resolve import catalog_warehouse, get_namespace, tabular_not_found
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import idempotency as store
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.db import now_ms
from lakekeeper_host.store.idempotency import IdempotencyClaim
from lakekeeper_host.store.warehouses import WarehouseRow

log = logging.getLogger(__name__)

HEADER = "idempotency-key"
# the operations that accept a key (spec operationIds)
OPERATIONS = frozenset(
    {
        "createNamespace",
        "updateProperties",
        "dropNamespace",
        "createTable",
        "updateTable",
        "dropTable",
        "renameTable",
        "registerTable",
        "commitTransaction",
        "createView",
        "replaceView",
        "dropView",
        "renameView",
        "registerView",
        # the Generic Table API (Lakekeeper's generic-table-v1 create, drop and rename)
        "createGenericTable",
        "dropGenericTable",
        "renameGenericTable",
    }
)
_NOT_REPLAYED = frozenset({401, 403, 408, 419, 429})
_SECRET_CONFIG_KEY = re.compile(r"secret|token|session|password|sas|credential|access-key|private-key", re.I)
# response headers worth replaying (the rest are per-request: request id, dates, CORS)
REPLAYED_HEADERS = ("content-type", "etag")


def enabled(state: AppState) -> bool:
    return state.settings.host.idempotency.enabled


def advertised_lifetime(state: AppState) -> str | None:
    """The ``idempotency-key-lifetime`` of ``/config`` (None when the feature is off)."""
    config = state.settings.host.idempotency
    return format_duration(config.lifetime) if config.enabled else None


def parse_key(value: str | None) -> str | None:
    """The header value as a canonical UUID; absent/blank is None, anything else a 400."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise bad_request("Idempotency-Key header must be a valid UUID (RFC 9562)", "InvalidIdempotencyKey") from None


def is_final(status: int) -> bool:
    """Whether an outcome is replayed (2xx and deterministic 4xx)."""
    return 200 <= status < 300 or (400 <= status < 500 and status not in _NOT_REPLAYED)


def _ms(value: timedelta) -> int:
    return int(value.total_seconds() * 1000)


def _stale_after_ms(state: AppState) -> int:
    return 2 * _ms(state.settings.host.max_request_time)


# ---------------------------------------------------------------- claim / finalize


def principal_of(meta: RequestMetadata) -> str:
    """Whose key it is: the user (and the role it acts as), ``anonymous`` without authentication."""
    actor = getattr(meta, "actor", None)
    if actor is None or actor.user_id is None:
        return "anonymous"
    return f"user:{actor.user_id}" + (f"#role:{actor.assumed_role}" if actor.assumed_role else "")


def request_fingerprint(query: bytes | str, body: bytes) -> str:
    """A digest of what the request asks: its query parameters (sorted) and its body (as canonical
    JSON when it is JSON, so a retry that orders keys differently is the same request)."""
    text = query.decode("latin-1") if isinstance(query, bytes) else query
    digest = hashlib.sha256(json.dumps(sorted(parse_qsl(text, keep_blank_values=True))).encode())
    try:
        canonical = json.dumps(json.loads(body), sort_keys=True, separators=(",", ":")).encode() if body else b""
    except (ValueError, RecursionError):
        canonical = body
    digest.update(b"\0" + canonical)
    return digest.hexdigest()


def new_claim(meta: RequestMetadata, warehouse_id: str, key: str, operation: str, route: str,
              query: bytes | str, body: bytes) -> IdempotencyClaim:
    if operation not in OPERATIONS:  # pragma: no cover - a programming error in a route
        raise ValueError(f"operation {operation!r} does not take an Idempotency-Key")
    return IdempotencyClaim(warehouse_id, principal_of(meta), key, operation, route, request_fingerprint(query, body))


async def claim(state: AppState, request: IdempotencyClaim) -> store.IdempotencyRecord | None:
    """Claim the key for ``request``: None to proceed, or the finalized record to replay (after
    :func:`authorize_replay`)."""
    lifetime_ms = _ms(state.settings.host.idempotency.lifetime)
    key = request.key
    for _ in range(5):
        async with state.store.transaction() as tx:
            if await store.try_insert(tx, request):
                return None
            record = await store.get(tx, request.warehouse_id, request.principal, key)
            if record is None:  # removed between the two statements: try again
                continue
            now = now_ms()
            if not record.in_flight and record.created_at + lifetime_ms <= now:
                if await store.take_over(tx, record, request):
                    return None
                continue
            if record.operation != request.operation:
                raise CatalogError(400, "IdempotencyKeyReused", f"Idempotency-Key {key} was already used for a "
                                   f"different operation ({record.operation})")
            if record.route != request.route:
                raise CatalogError(400, "IdempotencyKeyReused", f"Idempotency-Key {key} was already used for "
                                   f"{record.operation} on another object")
            if record.request_hash != request.request_hash:
                raise CatalogError(
                    422,
                    "UnprocessableEntityException",
                    f"Idempotency-Key {key} was already used with a different request; use a new key for a new "
                    "request",
                )
            if record.in_flight:
                if record.created_at + _stale_after_ms(state) <= now:
                    log.warning("taking over abandoned idempotency key %s (%s)", key, request.operation)
                    if await store.take_over(tx, record, request):
                        return None
                    continue
                raise CatalogError(
                    409, "RequestInProgress", f"A request with Idempotency-Key {key} is still being processed"
                )
            return record
    raise CatalogError(409, "RequestInProgress", f"A request with Idempotency-Key {key} is still being processed")


async def finalize(state: AppState, request: IdempotencyClaim, status: int, headers: dict[str, str],
                   body: str) -> None:
    """Store the outcome of a claimed key (or release it when the outcome is not replayable)."""
    if not is_final(status):
        await release(state, request)
        return
    envelope = {"headers": {k: v for k, v in headers.items() if k.lower() in REPLAYED_HEADERS}, "body": _scrub(body)}
    async with state.store.transaction() as tx:
        await store.finalize(tx, request, status, envelope)


async def release(state: AppState, request: IdempotencyClaim) -> None:
    try:
        async with state.store.transaction() as tx:
            await store.release(tx, request)
    except Exception:  # the record then expires as abandoned
        log.exception("releasing idempotency key %s failed", request.key)


# ---------------------------------------------------------------- authorizing a replay

# operation -> the action its route's namespace must allow (the operation's own check)
_ON_NAMESPACE = {"updateProperties": "update_properties", "dropNamespace": "delete", "createTable": "create_table",
                 "registerTable": "create_table", "createView": "create_view", "registerView": "create_view"}
# operation -> (kind, action) its route's table or view must allow
_ON_TABULAR = {"updateTable": ("table", "commit"), "dropTable": ("table", "drop"),
               "replaceView": ("view", "commit"), "dropView": ("view", "drop")}


async def authorize_replay(
    state: AppState, meta: RequestMetadata, warehouse_id: str, operation: str, params: Mapping[str, str], body: Any
) -> None:
    """Before a replay: the caller must still pass the operation's own authorization on the objects
    of the request that exist now (a revoked caller gets the refusal, 404 or 403, not the record).

    An object the operation removed or renamed away (a drop, the source of a rename) is not asked
    about: its recorded answer (204) tells the caller nothing they did not learn the first time.
    """
    if checking_actor(state, meta) is None:
        return
    warehouse = await catalog_warehouse(state, warehouse_id)
    raw_namespace = params.get("namespace")
    parts = parse_namespace_path(raw_namespace) if raw_namespace is not None else None
    if operation in _ON_NAMESPACE and parts is not None:
        await _namespace_allows(state, meta, warehouse, parts, _ON_NAMESPACE[operation])
    elif operation in _ON_TABULAR and parts is not None:
        kind, action = _ON_TABULAR[operation]
        raw_name = params.get(kind)
        if raw_name is not None:
            await _tabular_allows(state, meta, warehouse, parts, parse_name_path(raw_name), kind, action)
    elif operation == "createNamespace":
        created = body.get("namespace") if isinstance(body, dict) else None
        if _is_identifier(created) and len(created) > 1:
            await _namespace_allows(state, meta, warehouse, created[:-1], "create_namespace")
        else:
            await authorize_warehouse(state, meta, "create_namespace", warehouse.id)
    elif operation in ("renameTable", "renameView"):
        kind = "table" if operation == "renameTable" else "view"
        for end in ("source", "destination"):  # the source until the rename ran, then the destination
            ident = _table_ident(body.get(end) if isinstance(body, dict) else None)
            if ident and await _tabular_allows(state, meta, warehouse, ident[0], ident[1], kind, "rename"):
                break
    elif operation == "commitTransaction":
        changes = body.get("table-changes") if isinstance(body, dict) else None
        for change in changes if isinstance(changes, list) else []:
            ident = _table_ident(change.get("identifier") if isinstance(change, dict) else None)
            if ident:
                await _tabular_allows(state, meta, warehouse, ident[0], ident[1], "table", "commit")


def _is_identifier(parts: Any) -> bool:
    return isinstance(parts, list) and bool(parts) and all(isinstance(p, str) for p in parts)


def _table_ident(value: Any) -> tuple[list[str], str] | None:
    """``{"namespace": [..], "name": ..}`` as (namespace, name), None when it is not one."""
    if isinstance(value, dict) and _is_identifier(value.get("namespace")) and isinstance(value.get("name"), str):
        return value["namespace"], value["name"]
    return None


async def _namespace_allows(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: Sequence[str], action: str
) -> None:
    namespace = await get_namespace(state, warehouse, parts)
    if namespace is not None:
        await authorize(state, meta, action, "namespace", namespace.id, warehouse.id, hidden=no_such_namespace(parts))


async def _tabular_allows(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: Sequence[str], name: str, kind: str,
    action: str,
) -> bool:
    """Check ``action`` on the table/view if it exists; whether it did."""
    found = await tabular_store.find_tabular(state.store, warehouse.id, list(parts), name, kind, with_metadata=False)
    if found.tabular is None:
        return False
    hidden = tabular_not_found(kind, parts, name)
    await authorize(state, meta, action, kind, found.tabular.id, warehouse.id, hidden=hidden)
    return True


def replay(record: store.IdempotencyRecord) -> tuple[int, dict[str, str], str]:
    """(status, headers, body) of a finalized record."""
    envelope = record.response or {}
    return int(record.http_status or 200), dict(envelope.get("headers") or {}), str(envelope.get("body") or "")


def _scrub(body: str) -> str:
    """Drop vended credentials from a JSON body before it is stored."""
    if not body:
        return body
    try:
        payload = json.loads(body)
    except ValueError:
        return body
    if not isinstance(payload, dict):
        return body
    changed = payload.pop("storage-credentials", None) is not None
    config = payload.get("config")
    if isinstance(config, dict):
        secret = [k for k in config if _SECRET_CONFIG_KEY.search(k)]
        for k in secret:
            config.pop(k)
        changed = changed or bool(secret)
    return json.dumps(payload, separators=(",", ":")) if changed else body


# ---------------------------------------------------------------- cleanup


async def cleanup_expired(state: AppState) -> int:
    """Remove records older than lifetime + grace period; returns how many."""
    config = state.settings.host.idempotency
    cutoff = now_ms() - _ms(config.lifetime + config.grace_period)
    async with state.store.transaction() as tx:
        return await store.delete_older_than(tx, cutoff)


def cleanup_interval_seconds(state: AppState) -> float:
    config = state.settings.host.idempotency
    return min(60.0, max(1.0, (config.lifetime + config.grace_period).total_seconds() / 4))


async def cleanup_loop(state: AppState) -> None:
    """Periodically remove expired idempotency records (each run bounded by ``cleanup_timeout``)."""
    config = state.settings.host.idempotency
    interval = cleanup_interval_seconds(state)
    while True:
        try:
            removed = await asyncio.wait_for(cleanup_expired(state), config.cleanup_timeout.total_seconds())
            if removed:
                log.debug("removed %d expired idempotency record(s)", removed)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("idempotency cleanup failed")
        await asyncio.sleep(interval)

