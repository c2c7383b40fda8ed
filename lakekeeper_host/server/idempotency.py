"""Idempotency-Key on mutating catalog operations (Iceberg REST spec; Lakekeeper §1.1, §4.9).

A client sends ``Idempotency-Key: <uuid>`` on a mutation and may retry it with the same key.
The first request *claims* the key (an in-flight record), runs, and *finalizes* the record with
its outcome; a retry within the lifetime gets that outcome back without the change running again.

* 2xx and deterministic 4xx outcomes are finalized and replayed (status, body, ``ETag``).
  Authentication/rate-limit answers (401, 403, 408, 419, 429) and 5xx are not: the record is
  released and a retry runs the operation.
* The same key on a different operation is ``400 IdempotencyKeyReused``; while the first
  request still runs, a duplicate is ``409 RequestInProgress``. An in-flight record older than
  twice the request timeout is treated as abandoned (its process died) and taken over.
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
import json
import logging
import re
import uuid
from datetime import timedelta

from lakekeeper_host.config.types import format_duration
from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import idempotency as store
from lakekeeper_host.store.db import now_ms

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


async def claim(state: AppState, warehouse_id: str, key: str, operation: str) -> store.IdempotencyRecord | None:
    """Claim ``key`` for ``operation``: None to proceed, or the finalized record to replay."""
    # ------------------------------------------------ VALIDATIONS
    if operation not in OPERATIONS:  # pragma: no cover - a programming error in a route
        raise ValueError(f"operation {operation!r} does not take an Idempotency-Key")
    lifetime_ms = _ms(state.settings.host.idempotency.lifetime)

    # ------------------------------------------------ BUSINESS LOGIC
    for _ in range(5):
        async with state.store.transaction() as tx:
            if await store.try_insert(tx, warehouse_id, key, operation):
                return None
            record = await store.get(tx, warehouse_id, key)
            if record is None:  # removed between the two statements: try again
                continue
            now = now_ms()
            if not record.in_flight and record.created_at + lifetime_ms <= now:
                if await store.take_over(tx, record, operation):
                    return None
                continue
            if record.operation != operation:
                raise CatalogError(
                    400,
                    "IdempotencyKeyReused",
                    f"Idempotency-Key {key} was already used for a different operation ({record.operation})",
                )
            if record.in_flight:
                if record.created_at + _stale_after_ms(state) <= now:
                    log.warning("taking over abandoned idempotency key %s (%s)", key, operation)
                    if await store.take_over(tx, record, operation):
                        return None
                    continue
                raise CatalogError(
                    409, "RequestInProgress", f"A request with Idempotency-Key {key} is still being processed"
                )
            return record
    raise CatalogError(409, "RequestInProgress", f"A request with Idempotency-Key {key} is still being processed")


async def finalize(
    state: AppState, warehouse_id: str, key: str, status: int, headers: dict[str, str], body: str
) -> None:
    """Store the outcome of a claimed key (or release it when the outcome is not replayable)."""
    if not is_final(status):
        await release(state, warehouse_id, key)
        return
    envelope = {"headers": {k: v for k, v in headers.items() if k.lower() in REPLAYED_HEADERS}, "body": _scrub(body)}
    async with state.store.transaction() as tx:
        await store.finalize(tx, warehouse_id, key, status, envelope)


async def release(state: AppState, warehouse_id: str, key: str) -> None:
    try:
        async with state.store.transaction() as tx:
            await store.release(tx, warehouse_id, key)
    except Exception:  # the record then expires as abandoned
        log.exception("releasing idempotency key %s failed", key)


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

