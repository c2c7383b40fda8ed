"""ETags of ``loadTable`` and the ``If-None-Match`` -> ``304 Not Modified`` decision (Lakekeeper §1.1).

A tag names one response *shape* of one metadata version: it hashes the warehouse id, the
metadata location, the ``snapshots`` filter and -- when the body carries storage ``config`` --
the access delegation, the storage permission level and the warehouse version (a storage-profile
edit changes the config without moving the metadata). Wire form, weak because two responses
with the same tag may carry freshly minted credentials::

    W/"lk2.<hash>"                      nothing expiring was vended
    W/"lk2.<hash>.<revalidate-hex>"     credentials were vended; epoch ms until which a 304 is safe

A 304 is answered only when a client tag has the current hash and either carries a revalidation
point still in the future, or carries none and this load would vend no expiring credentials.
``*`` matches any existing metadata under the same rule as a tag without revalidation point.
Unparseable tags never match, so the client reloads.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Awaitable, Callable, Iterable

from attrs import frozen

from lakekeeper_host.service.storage import DataAccess, StoragePermission

ETAG_PREFIX = "lk2"
MAX_CREDENTIAL_SERVE_WINDOW_MS = 3_600_000

_PERMISSION_TAG = {
    StoragePermission.READ: "r",
    StoragePermission.READ_WRITE: "rw",
    StoragePermission.READ_WRITE_DELETE: "rwd",
}


def _delegation_tag(access: DataAccess) -> str:
    vended = bool(access & DataAccess.VENDED_CREDENTIALS)
    signing = bool(access & DataAccess.REMOTE_SIGNING)
    if access & DataAccess.CLIENT_MANAGED and not (vended or signing):
        return "cm"
    return "d" + ("v" if vended else "-") + ("r" if signing else "-")


@frozen
class StorageShape:
    """The per-request inputs of a load response's storage ``config``."""

    access: DataAccess
    permission: StoragePermission
    warehouse_version: int


@frozen
class TableETag:
    hash: str
    revalidate_after_ms: int | None = None

    def render(self) -> str:
        inner = f"{ETAG_PREFIX}.{self.hash}"
        if self.revalidate_after_ms is not None:
            inner += f".{self.revalidate_after_ms:x}"
        return f'W/"{inner}"'

    @classmethod
    def parse(cls, value: str) -> TableETag | None:
        """A bare tag value (``W/`` and quotes stripped); None when it is not one of ours."""
        parts = value.split(".")
        if len(parts) not in (2, 3) or parts[0] != ETAG_PREFIX or not parts[1]:
            return None
        revalidate = None
        if len(parts) == 3:
            try:
                revalidate = int(parts[2], 16)
            except ValueError:
                return None
        return cls(parts[1], revalidate)


def shape_hash(
    warehouse_id: str, metadata_location: str, *, snapshots: str = "all", storage: StorageShape | None = None
) -> str:
    """The hash of one response shape; NUL separators keep the slots from being re-split. Memoized:
    every load of a table asks it with the same inputs until the table changes."""
    return _shape_hash(warehouse_id, metadata_location, snapshots, storage)


@functools.lru_cache(maxsize=8192)
def _shape_hash(warehouse_id: str, metadata_location: str, snapshots: str, storage: StorageShape | None) -> str:
    digest = hashlib.blake2b(digest_size=8)
    for part in (warehouse_id, metadata_location, snapshots):
        digest.update(part.encode())
        digest.update(b"\0")
    if storage is None:
        digest.update(b"nc")
    else:
        digest.update(_delegation_tag(storage.access).encode())
        digest.update(b"\0")
        digest.update(_PERMISSION_TAG[storage.permission].encode())
        digest.update(b"\0")
        digest.update(int(storage.warehouse_version).to_bytes(8, "little", signed=True))
    return digest.hexdigest()


def revalidate_after_ms(expires_at_ms: int | None, now_ms: int | None = None) -> int | None:
    """Until when a 304 may stand for a credential expiring at ``expires_at_ms``.

    Half the remaining lifetime (at most an hour), never past the expiry itself.
    """
    if expires_at_ms is None:
        return None
    now = _now_ms() if now_ms is None else now_ms
    remaining = max(0, expires_at_ms - now)
    value = min(now + min(remaining // 2, MAX_CREDENTIAL_SERVE_WINDOW_MS), expires_at_ms)
    return value if value > 0 else None


def table_etag(
    warehouse_id: str,
    metadata_location: str,
    *,
    snapshots: str = "all",
    storage: StorageShape | None = None,
    expires_at_ms: int | None = None,
) -> str:
    """The ``ETag`` header value of a load response (``storage=None``: a body without storage config)."""
    return etag_of(shape_hash(warehouse_id, metadata_location, snapshots=snapshots, storage=storage), expires_at_ms)


def etag_of(hash_: str, expires_at_ms: int | None) -> str:
    """The ``ETag`` header value for a response-shape hash (see :func:`table_etag`)."""
    return TableETag(hash_, revalidate_after_ms(expires_at_ms)).render()


def parse_if_none_match(header: str | None) -> list[str]:
    """The entity tags of an ``If-None-Match`` header, ``W/`` and quotes stripped."""
    tags = []
    for part in (header or "").split(","):
        value = part.strip()
        if value.startswith(("W/", "w/")):
            value = value[2:]
        value = value.strip().strip('"')
        if value:
            tags.append(value)
    return tags


async def match_not_modified(
    client_tags: Iterable[str],
    current_hash: str,
    *,
    vends_credentials: Callable[[], Awaitable[bool]],
    now_ms: int | None = None,
) -> str | None:
    """The tag to answer ``304`` with, or None for a full response.

    ``vends_credentials`` is asked (at most once) only when a matching tag carries no
    revalidation point: a cached body without credentials must not stand in for one that
    would now carry them.
    """
    now = _now_ms() if now_ms is None else now_ms
    vends: bool | None = None

    async def would_vend() -> bool:
        nonlocal vends
        if vends is None:
            vends = bool(await vends_credentials())
        return vends

    for value in client_tags:
        if value == "*":
            if not await would_vend():
                return TableETag(current_hash).render()
            continue
        parsed = TableETag.parse(value)
        if parsed is None or parsed.hash != current_hash:
            continue
        if parsed.revalidate_after_ms is not None:
            if now < parsed.revalidate_after_ms:
                return parsed.render()
        elif not await would_vend():
            return parsed.render()
    return None


def _now_ms() -> int:
    return int(time.time() * 1000)
