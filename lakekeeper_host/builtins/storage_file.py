"""Built-in storage ``file``: a warehouse on the local filesystem (``file:///...`` locations).

The embedded default and the tests use it; it vends no credentials (clients read the files
directly). It implements the same ``Storage`` interface as the S3/ADLS/GCS plugins.

The server touches these files with its own rights, so a warehouse root must lie inside a directory
the operator allows (``LAKEKEEPER__FILE_STORAGE_ALLOWED_ROOTS``, default: the data directory) and
may not contain the embedded database; and no read, write or delete leaves the root, also not
through a symbolic link someone placed inside it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from attrs import field, frozen

from lakekeeper_host import hookimpl
from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.ids import new_id
from lakekeeper_host.registry import BuildContext, PluginSettings, StorageSpec
from lakekeeper_host.service.endpoints import StorageEndpoint
from lakekeeper_host.service.storage import (
    StoragePermission,
    TableAccessRequest,
    TableConfig,
    ValidationProbes,
    is_below_root,
    join_location,
)

log = logging.getLogger(__name__)

METADATA_DIR_RECHECK_S = 30.0
METADATA_DIR_CAPACITY = 10_000
ALLOWED_ROOTS_VARIABLE = "LAKEKEEPER__FILE_STORAGE_ALLOWED_ROOTS"


@frozen
class FileStorageConfig:
    """Where ``file`` warehouses may live (read when a file warehouse is created or loaded)."""

    # directories a file warehouse's root must lie in (JSON list or a,b); empty: LAKEKEEPER__DATA_DIR
    # example: ["/srv/lakekeeper/warehouses"]
    file_storage_allowed_roots: tuple[str, ...] = ()


def _validate_root(instance: object, attribute: object, value: str) -> None:
    if not isinstance(value, str) or not value:
        raise bad_request("Invalid storage-profile.root: must be a non-empty string", "InvalidStorageProfile")
    if not os.path.isabs(value):
        # a CatalogError, not a ValueError: cattrs would report the latter without the field name
        raise bad_request(
            f"Invalid storage-profile.root: must be an absolute directory path (starting with /), got {value!r}",
            "InvalidStorageProfile",
        )


@frozen
class FileProfile:
    """``{"type": "file", "root": "/absolute/dir"}``."""

    storage_type: ClassVar[str] = "file"
    root: str = field(validator=_validate_root)
    storage_layout: dict[str, Any] | None = None


def path_of(location: str) -> Path:
    parts = urlsplit(location)
    if parts.scheme not in ("file", ""):
        raise bad_request(f"Not a file location: {location}", "InvalidLocation")
    if parts.netloc:
        # file://host/x is not file:///x: a location on another machine is never ours to touch
        raise bad_request(
            f"Invalid location {location}: a file location may not name a host (use file:///path)", "InvalidLocation"
        )
    return Path(unquote(parts.path))


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def check_root_allowed(root: str, settings: PluginSettings) -> None:
    """400 unless ``root`` lies inside an allowed directory and holds no file of the catalog's own."""
    allowed = settings.section(FileStorageConfig).file_storage_allowed_roots or (settings.host.data_dir,)
    real = os.path.realpath(root)
    if not any(_within(real, os.path.realpath(directory)) for directory in allowed):
        raise bad_request(
            f"Invalid storage-profile.root {root}: file warehouses must lie inside a directory the operator "
            f"allows with {ALLOWED_ROOTS_VARIABLE} (default: the server's data directory)",
            "InvalidStorageProfile",
        )
    database = settings.embedded_database_file
    if database is not None and _within(os.path.realpath(database), real):
        raise bad_request(
            f"Invalid storage-profile.root {root}: it contains the catalog's own database", "InvalidStorageProfile"
        )


def location_of(path: str | Path) -> str:
    return "file://" + str(path)


class FileStorage:
    storage_type = "file"

    def __init__(self, profile: FileProfile):
        self.profile = profile
        self._base = location_of(os.path.normpath(profile.root))
        self._real_root = os.path.realpath(profile.root)
        # table location -> until when its metadata directory is known to exist (see table_config)
        self._metadata_dirs: dict[str, float] = {}

    def base_location(self) -> str:
        return self._base

    def normalize_location(self, location: str) -> str:
        parts = urlsplit(location)
        if parts.scheme == "file":
            # file:/x and file:///x are the same place; Spark writes the former
            return location_of(os.path.normpath(path_of(location))).rstrip("/")
        return location.rstrip("/")

    def is_allowed_location(self, location: str) -> bool:
        if not location.startswith("file:"):
            return False
        return is_below_root(self.normalize_location(location), self._base)

    def _confined(self, location: str) -> Path:
        """The path of ``location``, refused unless it resolves (symbolic links followed) into the root."""
        path = path_of(location)
        if not _within(os.path.realpath(path), self._real_root):
            raise bad_request(f"Location {location} resolves outside the warehouse root", "InvalidLocation")
        return path

    async def write(self, location: str, data: bytes) -> None:
        path = self._confined(location)

        def _write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{new_id()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)  # readers never see a half-written file

        await asyncio.to_thread(_write)

    async def read(self, location: str) -> bytes:
        return await asyncio.to_thread(lambda: self._confined(location).read_bytes())

    async def exists(self, location: str) -> bool:
        # one stat() on a local disk costs microseconds, a hop to a worker thread ten times that;
        # loadTable asks on every call (a deleted metadata file must answer 404). Lexically inside the
        # root (resolving links would cost a stat per path segment): existence is all it tells.
        path = os.path.normpath(path_of(location))
        if not _within(path, os.path.normpath(self.profile.root)):
            raise bad_request(f"Location {location} lies outside the warehouse root", "InvalidLocation")
        return os.path.exists(path)

    async def delete(self, location: str) -> None:
        await asyncio.to_thread(lambda: self._confined(location).unlink(missing_ok=True))

    async def list(self, prefix: str) -> AsyncIterator[str]:
        root = self._confined(prefix)

        def _walk() -> list[str]:
            if root.is_file():
                return [location_of(root)]
            out: list[str] = []
            for dirpath, _, files in os.walk(root):
                out.extend(location_of(Path(dirpath) / f) for f in files)
            return sorted(out)

        for item in await asyncio.to_thread(_walk):
            yield item

    async def is_empty(self, prefix: str) -> bool:
        async for _ in self.list(prefix):
            return False
        return True

    async def delete_prefix(self, prefix: str) -> int:
        root = self._confined(prefix)

        def _remove() -> int:
            if not root.exists():
                return 0
            if root.is_file():
                root.unlink()
                return 1
            count = sum(len(files) for _, _, files in os.walk(root))
            shutil.rmtree(root, ignore_errors=True)
            return count

        return await asyncio.to_thread(_remove)

    async def table_config(self, request: TableAccessRequest) -> TableConfig:
        if request.permission is not StoragePermission.READ:
            # Unlike an object store, a directory must exist before a file goes into it. A staged
            # table has no metadata file yet, and DuckDB writes its first manifest into
            # <table>/metadata/ without creating the directory (its CTAS failed with "No such file").
            # A generic table has no Iceberg metadata: its own directory is what writers need
            # (PyArrow writes a Parquet file into it without creating it).
            # Asked on every writable load: a directory found is not asked about again for
            # METADATA_DIR_RECHECK_S (one stat() per table and half minute, not per load).
            location = request.table_location
            now = time.monotonic()
            if self._metadata_dirs.get(location, 0.0) < now:
                needed = location if request.tabular_kind == "generic_table" else join_location(location, "metadata")
                directory = path_of(needed)
                if not os.path.isdir(directory):
                    try:
                        self._confined(needed)
                        await asyncio.to_thread(directory.mkdir, parents=True, exist_ok=True)
                    except (OSError, CatalogError) as exc:  # a courtesy to such writers: a load must not fail over it
                        log.debug("cannot create %s: %s", directory, exc)
                        return TableConfig()
                if len(self._metadata_dirs) >= METADATA_DIR_CAPACITY:
                    self._metadata_dirs.clear()
                self._metadata_dirs[location] = now + METADATA_DIR_RECHECK_S
        return TableConfig()

    def catalog_defaults(self, *, soft_delete_enabled: bool) -> dict[str, str]:
        return {}

    def endpoints(self) -> tuple[StorageEndpoint, ...]:
        return ()  # local files only

    def validation_probes(self) -> ValidationProbes:
        return ValidationProbes(connect=self._connect, no_vending_reason="file storage vends no credentials")

    async def _connect(self) -> None:
        return None

    def immutable_fields(self) -> tuple[str, ...]:
        return ("root",)

    async def close(self) -> None:
        return None


def build_file_storage(profile: FileProfile, credential: None, ctx: BuildContext) -> FileStorage:
    # on every build (a warehouse's storage is cached per version): a root the operator no longer
    # allows stops being served instead of being touched
    check_root_allowed(profile.root, ctx.settings)
    return FileStorage(profile)


@hookimpl
def lakekeeper_storage_profiles() -> list[StorageSpec[FileProfile, None]]:
    return [
        StorageSpec(
            storage_type="file", profile_cls=FileProfile, factory=build_file_storage, config_cls=FileStorageConfig
        )
    ]
