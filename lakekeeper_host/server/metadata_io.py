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
import zlib
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from pydantic import Field, ValidationError
from pyiceberg.exceptions import ValidationError as IcebergValidationError
from pyiceberg.table.metadata import TableMetadata, TableMetadataUtil, TableMetadataV3
from pyiceberg.typedef import IcebergBaseModel

from lakekeeper_host.errors import CatalogError, bad_request, not_found
from lakekeeper_host.ids import new_id
from lakekeeper_host.server.tabulars.locations import inside_tabular
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


async def read_file(storage: Storage, location: str) -> bytes:
    """The bytes of a metadata file a client named (registerTable, registerView).

    A missing file is 404 ``NotFoundException`` "Failed to open input stream for file: <loc>"
    (the Java client's wording), a directory too.
    """
    try:
        return await storage.read(location)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError, KeyError):
        raise not_found(f"Failed to open input stream for file: {location}") from None
    except CatalogError:
        raise
    except OSError as exc:
        if not await _exists(storage, location):
            raise not_found(f"Failed to open input stream for file: {location}") from None
        raise CatalogError(500, "StorageError", f"Failed to read {location}: {exc}") from None


# what a failed decode of a file raises: bad UTF-8, bad gzip, bad JSON, values the models refuse
FILE_CONTENT_ERRORS = (ValueError, UnicodeDecodeError, IcebergValidationError, OSError, EOFError, zlib.error)


def invalid_file(location: str, exc: BaseException, kind: str = "table") -> CatalogError:
    """400 for a file that is not valid ``kind`` metadata, saying where but never echoing its content:
    the file may hold anything (a registered path is the client's choice)."""
    error_type = "InvalidTableMetadata" if kind == "table" else "InvalidViewMetadata"
    return bad_request(f"Invalid {kind} metadata in {location}: {content_problem(exc)}", error_type)


def content_problem(exc: BaseException) -> str:
    """What is wrong with a file's content, without quoting it: pydantic's field locations and those of
    its messages that do not repeat the value; JSON's position; else only the kind of problem."""
    cause = exc if isinstance(exc, ValidationError) else exc.__cause__
    if isinstance(cause, ValidationError):
        parts = []
        for error in cause.errors()[:3]:
            # pydantic's locations start with the format version it tried (the discriminator): left out
            loc = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in error.get("loc", ())
                           if p not in (1, 2, 3)).replace(".[", "[")  # fmt: skip
            message = str(error.get("msg", ""))
            value = error.get("input")
            quoted = isinstance(value, str | int | float) and not isinstance(value, bool) and str(value) in message
            if error.get("type") in ("value_error", "assertion_error") or quoted or not message:
                message = "invalid value"
            parts.append(f"{loc}: {message}" if loc else message)
        return "; ".join(parts)
    if isinstance(exc, json.JSONDecodeError):
        return f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, OSError | EOFError | zlib.error):
        return "not a readable gzip file"
    return "not valid metadata"


async def read_metadata(storage: Storage, location: str) -> tuple[TableMetadata, str]:
    """Read and parse a metadata file: (metadata, its JSON text); see :func:`read_file`.
    Unparseable content is a 400 that does not quote it."""
    raw = await read_file(storage, location)
    try:
        text = decode(raw)
        metadata = parse(text)
    except FILE_CONTENT_ERRORS as exc:
        raise invalid_file(location, exc) from None
    return metadata, text


async def _exists(storage: Storage, location: str) -> bool:
    try:
        return await storage.exists(location)
    except Exception:  # the read error is what matters
        return True


def referenced_files(metadata: TableMetadata) -> list[tuple[str, str]]:
    """``(what, location)`` of every other file a table's metadata names: its metadata log, the
    snapshots' manifest lists, statistics and partition statistics files."""
    named = [("the metadata-log entry", entry.metadata_file) for entry in metadata.metadata_log]
    named += [(f"the manifest-list of snapshot {s.snapshot_id}", s.manifest_list) for s in metadata.snapshots]
    named += [(f"the statistics-path of snapshot {s.snapshot_id}", s.statistics_path) for s in metadata.statistics]
    named += [
        (f"the partition statistics-path of snapshot {s.snapshot_id}", s.statistics_path)
        for s in getattr(metadata, "partition_statistics", None) or ()
    ]
    return named


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


async def delete_quietly(storage: Storage, files: Iterable[tuple[str, str]]) -> None:
    """Best-effort removal of ``(location, tabular location)`` pairs: leftovers of failed writes,
    expired metadata files. A location outside its tabular's location is never deleted, whatever
    names it (a registered file's ``metadata-log`` is the client's text)."""
    for location, tabular_location in files:
        if not inside_tabular(storage, location, tabular_location):
            log.warning("not deleting %s: it lies outside the location %s of its table", location, tabular_location)
            continue
        try:
            await storage.delete(location)
        except Exception:  # never fail a request over cleanup
            log.warning("could not delete %s", location, exc_info=True)


def json_dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))
