"""The storage interface every storage plugin implements (file, s3, adls, gcs, ...).

A plugin's ``StorageSpec.factory(profile, credential, ctx)`` returns a ``Storage`` for one
warehouse. The host does all metadata IO, location checks, purges and credential vending
through it, so a new cloud is one plugin. Building a storage does no IO: the host first checks the
URLs it declares (``Storage.endpoints()``, ``service/endpoints.py``), and validates a new profile with
its own probe sequence, into which the storage plugs ``validation_probes()``
(``service/storage_validation.py``). Errors that come from a store say what failed without quoting it
(``service/storage_errors.py``).
"""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from attrs import field, frozen

from lakekeeper_host.service.endpoints import StorageEndpoint


class StoragePermission(enum.Enum):
    """What vended credentials may do (Lakekeeper ``StoragePermissions``)."""

    READ = "read"
    READ_WRITE = "read-write"
    READ_WRITE_DELETE = "read-write-delete"


class DataAccess(enum.Flag):
    """Parsed ``X-Iceberg-Access-Delegation``."""

    NONE = 0
    VENDED_CREDENTIALS = enum.auto()
    REMOTE_SIGNING = enum.auto()
    CLIENT_MANAGED = enum.auto()

    @classmethod
    def from_header(cls, value: str | None) -> DataAccess:
        result = cls.NONE
        for part in (value or "").split(","):
            token = part.strip().lower()
            if token == "vended-credentials":
                result |= cls.VENDED_CREDENTIALS
            elif token == "remote-signing":
                result |= cls.REMOTE_SIGNING
            elif token == "client-managed":
                result |= cls.CLIENT_MANAGED
        return result

    def to_header(self) -> str:
        parts = []
        if self & DataAccess.VENDED_CREDENTIALS:
            parts.append("vended-credentials")
        if self & DataAccess.REMOTE_SIGNING:
            parts.append("remote-signing")
        if self & DataAccess.CLIENT_MANAGED:
            parts.append("client-managed")
        return ",".join(parts)


@frozen
class TableAccessRequest:
    """Everything a storage needs to decide what a client gets for one table."""

    table_location: str
    permission: StoragePermission
    access: DataAccess
    warehouse_id: str
    tabular_id: str
    # e.g. <base>/catalog/v1/<wh>/namespaces/<ns>/tables/<t>/credentials
    refresh_credentials_endpoint: str | None = None
    # <base>/catalog/ and the table-scoped signer path, for remote signing
    signer_uri: str | None = None
    signer_endpoint: str | None = None
    soft_delete_enabled: bool = False
    # "table", "view" or "generic_table" (Lance, Parquet, ...: no Iceberg metadata; engines write
    # whatever the format needs under ``table_location``)
    tabular_kind: str = "table"


@frozen
class TableConfig:
    """Properties for ``config`` and the vended ``storage-credentials`` of a load response."""

    config: dict[str, str] = field(factory=dict)
    # [{"prefix": <location>, "config": {...}}] -- only when something was vended
    storage_credentials: list[dict[str, Any]] = field(factory=list)
    # epoch ms after which the vended credential expires (drives ETag revalidation)
    expires_at_ms: int | None = None


@frozen
class ValidationCheck:
    name: str
    status: str  # passed | failed | skipped
    message: str | None = None


async def _nothing_to_close() -> None:
    return None


@frozen
class VendedAccess:
    """Object IO with nothing but the credentials vended for one location: what a table's client holds.

    ``write``/``read``/``delete`` raise ``PermissionError`` when the store refuses the request and
    another ``OSError`` (``storage_error``) for any other failure.
    """

    write: Callable[[str, bytes], Awaitable[None]]
    read: Callable[[str], Awaitable[bytes]]
    delete: Callable[[str], Awaitable[None]]
    close: Callable[[], Awaitable[None]] = _nothing_to_close
    # why the scope check does not apply (credentials for a whole container, say); None: it does
    scope_not_checked: str | None = None
    # reported as "skipped" with this reason, instead of failed, when the store accepted a write
    # outside the vended location (an emulator that checks no tokens); None: that write fails validation
    scope_unenforced_reason: str | None = None


@frozen
class ValidationProbes:
    """What a storage plugin hands the host's validation sequence (``storage_validation.validate_storage``)."""

    # build the clients; raising fails ``storage-client-initialized`` (raise a CatalogError with your own words)
    connect: Callable[[], Awaitable[None]]
    # issue read-write-delete credentials for a location; None when the profile vends none
    vend: Callable[[str], Awaitable[VendedAccess]] | None = None
    # why nothing is vended (when ``vend`` is None)
    no_vending_reason: str = "this storage vends no credentials"
    # the plugin's words for a failed probe of Lakekeeper's own IO at a location (e.g. the field to fix)
    explain: Callable[[OSError, str], str] | None = None


@runtime_checkable
class Storage(Protocol):
    """One warehouse's storage: locations, object IO and credential vending."""

    storage_type: str

    def base_location(self) -> str:
        """The warehouse root, e.g. ``s3://bucket/prefix`` or ``file:///data/wh`` (no trailing /)."""

    def normalize_location(self, location: str) -> str:
        """Canonical form used for comparisons (scheme aliases, no trailing slash)."""

    def is_allowed_location(self, location: str) -> bool:
        """Whether a user-supplied location may be used in this warehouse."""

    async def write(self, location: str, data: bytes) -> None: ...

    async def read(self, location: str) -> bytes: ...

    async def exists(self, location: str) -> bool: ...

    async def delete(self, location: str) -> None: ...

    def list(self, prefix: str) -> AsyncIterator[str]:
        """Every object location under ``prefix`` (recursive)."""

    async def is_empty(self, prefix: str) -> bool: ...

    async def delete_prefix(self, prefix: str) -> int:
        """Delete every object under ``prefix``; returns how many were removed."""

    async def table_config(self, request: TableAccessRequest) -> TableConfig:
        """Client properties (and vended credentials) for one table."""

    def catalog_defaults(self, *, soft_delete_enabled: bool) -> dict[str, str]:
        """Extra ``defaults`` for ``GET /config`` (e.g. ``s3.delete-enabled``)."""

    def endpoints(self) -> Sequence[StorageEndpoint]:
        """Every URL this storage connects to, each with the profile or credential field (or the
        setting) it comes from. The host checks them against the operator's endpoint policy
        (``service/endpoints.py``) before the storage does any IO; a URL left out is a hole in it."""

    def validation_probes(self) -> ValidationProbes:
        """The store-specific parts of the host's validation sequence (``service/storage_validation.py``)."""

    def immutable_fields(self) -> tuple[str, ...]:
        """Profile fields that may not change when the profile is replaced."""

    async def close(self) -> None: ...


def join_location(base: str, *parts: str) -> str:
    out = base.rstrip("/")
    for part in parts:
        out += "/" + part.strip("/")
    return out


def has_dot_segment(location: str) -> bool:
    """Whether the path of ``location`` has a ``.`` or ``..`` segment (``%2e`` spelled too, any case).

    A key with such a segment is literal to S3 but not to every S3-compatible server, HTTP proxy or
    file system, so it may name something else than a string comparison sees: never inside anything.
    """
    _, sep, rest = location.partition("://")
    path = rest if sep else location
    for segment in path.split("/"):
        decoded = segment.lower().replace("%2e", ".")
        if decoded in (".", ".."):
            return True
    return False


def is_sublocation(location: str, parent: str) -> bool:
    """True when ``location`` equals ``parent`` or lies below it (path-segment aware).

    A location with a ``.``/``..`` segment is inside nothing (see :func:`has_dot_segment`).
    """
    if has_dot_segment(location):
        return False
    location = location.rstrip("/")
    parent = parent.rstrip("/")
    return location == parent or location.startswith(parent + "/")


def is_below_root(location: str, root: str) -> bool:
    """True when ``location`` lies strictly below the warehouse root ``root`` (both canonical): where
    a table may live; the root itself is not a table location."""
    return location != root and is_sublocation(location, root)


def is_table_location(location: str, root: str, schemes: Sequence[str], canonical: Callable[[str], str]) -> bool:
    """An object store's ``Storage.is_allowed_location``: ``location`` has one of ``schemes`` (lower
    case) and, spelled ``canonical``-ly, lies strictly below the warehouse root ``root``."""
    return location.partition("://")[0].lower() in schemes and is_below_root(canonical(location), root)
