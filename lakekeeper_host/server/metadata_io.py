"""Table metadata files: naming, (de)serialisation, gzip, and which old files a commit expires.

File names follow Lakekeeper: ``<table-location>/metadata/<NNNNN>-<uuidv7>[.gz].metadata.json``
where ``NNNNN`` is the previous file's counter + 1 (``00000`` first). The codec comes from the
table property ``write.metadata.compression-codec``: ``gzip`` (Lakekeeper's default, extension
``.gz.metadata.json``) or ``none``.

After a successful commit, files that fell out of the metadata log (bounded by
``write.metadata.previous-versions-max``, default 100) are deleted when
``write.metadata.delete-after-commit.enabled`` is true -- Lakekeeper's default is ``true``.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import re
from collections import OrderedDict
from typing import Any

from pydantic import Field
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil, TableMetadataV3
from pyiceberg.typedef import IcebergBaseModel

from lakekeeper_host.errors import CatalogError, bad_request, not_found
from lakekeeper_host.ids import new_id
from lakekeeper_host.server.spec_json import reason
from lakekeeper_host.service.storage import Storage, join_location

log = logging.getLogger(__name__)

CODEC_PROPERTY = "write.metadata.compression-codec"
PREVIOUS_VERSIONS_MAX = "write.metadata.previous-versions-max"
DELETE_AFTER_COMMIT = "write.metadata.delete-after-commit.enabled"
DELETE_AFTER_COMMIT_DEFAULT = True

_COUNTER = re.compile(r"^(\d+)-[\w-]{36}(?:\.\w+)?\.metadata\.json$")


def codec(properties: dict[str, str]) -> str:
    """``gzip`` or ``none``; anything else is a 400."""
    value = properties.get(CODEC_PROPERTY, "gzip").strip().lower()
    if value not in ("gzip", "none"):
        raise bad_request(
            f"Unsupported {CODEC_PROPERTY} {value!r}: use 'gzip' or 'none'", "UnsupportedCompressionCodec"
        )
    return value


def delete_after_commit(properties: dict[str, str]) -> bool:
    value = properties.get(DELETE_AFTER_COMMIT)
    if value is None:
        return DELETE_AFTER_COMMIT_DEFAULT
    return value.strip().lower() in ("true", "yes", "1")


def _counter(metadata_location: str | None) -> int | None:
    if not metadata_location:
        return None
    match = _COUNTER.match(metadata_location.rsplit("/", 1)[-1])
    return int(match.group(1)) if match else None


def next_metadata_location(table_location: str, previous_location: str | None, properties: dict[str, str]) -> str:
    """Where the next metadata file of a table goes."""
    previous = _counter(previous_location)
    number = 0 if previous is None else previous + 1
    suffix = ".gz.metadata.json" if codec(properties) == "gzip" else ".metadata.json"
    return join_location(table_location, "metadata", f"{number:05d}-{new_id()}{suffix}")


def to_json(metadata: TableMetadata) -> str:
    """The JSON text of a metadata file (what the database keeps, too).

    Called through the base class: pyiceberg 0.12 refuses to write v3 metadata itself, but its
    v3 model serialises correctly.

    A long history is serialised snapshot by snapshot through :data:`_SNAPSHOT_JSON`: a commit's
    new metadata shares every earlier ``Snapshot`` object with the cached parse of the previous one,
    and pyiceberg's per-snapshot serialiser (Python) was most of a 10,000-snapshot commit's
    serialisation. The text is the same, byte for byte (``tests/host/test_metadata_json.py``).
    """
    snapshots = metadata.snapshots
    # v1 writes its snapshots without ``sequence-number`` (pyiceberg's serialize_snapshots): whole
    if len(snapshots) < _SPLICE_MIN_SNAPSHOTS or metadata.format_version < 2:
        return IcebergBaseModel.model_dump_json(metadata)
    text = IcebergBaseModel.model_dump_json(metadata.model_copy(update={"snapshots": []}))
    at = text.find(_EMPTY_SNAPSHOTS)
    if at < 0 or text.find(_EMPTY_SNAPSHOTS, at + 1) >= 0:
        return IcebergBaseModel.model_dump_json(metadata)
    body = ",".join([_snapshot_json(snapshot) for snapshot in snapshots])
    return f'{text[:at]},"snapshots":[{body}]{text[at + len(_EMPTY_SNAPSHOTS):]}'


_SPLICE_MIN_SNAPSHOTS = 50
_EMPTY_SNAPSHOTS = ',"snapshots":[]'
# id(Snapshot) -> (the Snapshot, kept alive so its id is not reused; its JSON); LRU
_SNAPSHOT_JSON: OrderedDict[int, tuple[Any, str]] = OrderedDict()
# enough for one 10,000-snapshot table and its next commit; it also keeps those Snapshot objects alive
# (~3 KiB each parsed) after the metadata cache has let their table go
_SNAPSHOT_JSON_CAPACITY = 12_000


def _snapshot_json(snapshot: Any) -> str:
    entry = _SNAPSHOT_JSON.get(id(snapshot))
    if entry is not None and entry[0] is snapshot:
        _SNAPSHOT_JSON.move_to_end(id(snapshot))
        return entry[1]
    text = IcebergBaseModel.model_dump_json(snapshot)
    _SNAPSHOT_JSON[id(snapshot)] = (snapshot, text)
    if len(_SNAPSHOT_JSON) > _SNAPSHOT_JSON_CAPACITY:
        _SNAPSHOT_JSON.popitem(last=False)
    return text


# The fastest level: metadata JSON is repetitive enough that level 1 ends within a few per cent of
# level 9 at a fifth of the CPU (3.3 MB of snapshots: 9 ms vs 45 ms), and REST clients take the
# metadata from the response, not from this file.
GZIP_LEVEL = 1
# bigger documents are compressed off the event loop (zlib releases the GIL meanwhile)
_INLINE_BYTES = 256 * 1024


def encode(location: str, metadata_json: str) -> bytes:
    data = metadata_json.encode()
    return gzip.compress(data, GZIP_LEVEL, mtime=0) if location.endswith(".gz.metadata.json") else data


def decode(data: bytes) -> str:
    if data[:2] == b"\x1f\x8b":  # gzip magic, whatever the file is called
        data = gzip.decompress(data)
    return data.decode()


class EncryptedKey(IcebergBaseModel):
    """One entry of a v3 table's ``encryption-keys`` (the key material is KMS-wrapped, base64)."""

    key_id: str = Field(alias="key-id")
    encrypted_key_metadata: str = Field(alias="encrypted-key-metadata")
    encrypted_by_id: str | None = Field(alias="encrypted-by-id", default=None)
    properties: dict[str, str] | None = Field(default=None)


class TableMetadataV3WithKeys(TableMetadataV3):
    """pyiceberg 0.12's v3 metadata plus the spec's ``encryption-keys``, which it would drop.

    Only tables that have keys use it; ``add-encryption-key`` switches a table over.
    """

    encryption_keys: list[EncryptedKey] | None = Field(alias="encryption-keys", default=None)


def parse(metadata_json: str | bytes | dict[str, Any]) -> TableMetadata:
    if isinstance(metadata_json, dict):
        if metadata_json.get("encryption-keys") and metadata_json.get("format-version") == 3:
            return TableMetadataV3WithKeys.model_validate(metadata_json)
        return TableMetadataUtil.parse_obj(metadata_json)
    metadata = TableMetadataUtil.parse_raw(metadata_json)
    marker = b'"encryption-keys"' if isinstance(metadata_json, bytes) else '"encryption-keys"'
    if metadata.format_version == 3 and marker in metadata_json:
        return TableMetadataV3WithKeys.model_validate_json(metadata_json)
    return metadata


async def write_metadata(storage: Storage, location: str, metadata_json: str) -> None:
    if len(metadata_json) > _INLINE_BYTES:
        data = await asyncio.to_thread(encode, location, metadata_json)
    else:
        data = encode(location, metadata_json)
    await storage.write(location, data)


async def read_metadata(storage: Storage, location: str) -> tuple[TableMetadata, str]:
    """Read and parse a metadata file: (metadata, its JSON text).

    A missing file is 404 ``NotFoundException`` "Failed to open input stream for file: <loc>"
    (the Java client's wording); unparseable content is a 400.
    """
    try:
        raw = await storage.read(location)
    except (FileNotFoundError, KeyError):
        raise not_found(f"Failed to open input stream for file: {location}") from None
    except CatalogError:
        raise
    except OSError as exc:
        if not await _exists(storage, location):
            raise not_found(f"Failed to open input stream for file: {location}") from None
        raise CatalogError(500, "StorageError", f"Failed to read {location}: {exc}") from None
    try:
        text = decode(raw)
        metadata = parse(text)
    except (ValueError, UnicodeDecodeError, IcebergValidationError) as exc:
        # pydantic's locations start with the format version it tried (the discriminator): left out
        message = reason(exc, tags=(1, 2, 3))
        raise bad_request(f"Invalid table metadata in {location}: {message}", "InvalidTableMetadata") from None
    return metadata, text


async def _exists(storage: Storage, location: str) -> bool:
    try:
        return await storage.exists(location)
    except Exception:  # the read error is what matters
        return True


def expired_files(
    old: TableMetadata | None, old_location: str | None, new: TableMetadata, new_location: str
) -> list[str]:
    """Metadata files of ``old`` that ``new`` no longer references (fell out of the log)."""
    if old is None or not delete_after_commit(dict(new.properties)):
        return []
    before = {entry.metadata_file for entry in old.metadata_log}
    if old_location:
        before.add(old_location)
    after = {entry.metadata_file for entry in new.metadata_log}
    after.add(new_location)
    return sorted(before - after)


async def delete_quietly(storage: Storage, locations: list[str]) -> None:
    """Best-effort removal (leftovers of failed commits, expired metadata files)."""
    for location in locations:
        try:
            await storage.delete(location)
        except Exception:  # never fail a request over cleanup
            log.warning("could not delete %s", location, exc_info=True)


def json_dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
