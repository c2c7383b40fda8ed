"""Built-in storage ``file``: a warehouse on the local filesystem (``file:///...`` locations).

The embedded default and the tests use it; it vends no credentials (clients read the files
directly). It implements the same ``Storage`` interface as the S3/ADLS/GCS plugins.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import ClassVar
from urllib.parse import unquote, urlsplit

from attrs import field, frozen

from lakekeeper_host import hookimpl
from lakekeeper_host.errors import bad_request
from lakekeeper_host.ids import new_id
from lakekeeper_host.registry import StorageSpec
from lakekeeper_host.service.endpoints import StorageEndpoint
from lakekeeper_host.service.storage import (
    StoragePermission,
    TableAccessRequest,
    TableConfig,
    ValidationProbes,
    is_sublocation,
    join_location,
)

log = logging.getLogger(__name__)


def _validate_root(instance, attribute, value: str) -> None:
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
    storage_layout: dict | None = None


def path_of(location: str) -> Path:
    parts = urlsplit(location)
    if parts.scheme not in ("file", ""):
        raise bad_request(f"Not a file location: {location}", "InvalidLocation")
    return Path(unquote(parts.path))


def location_of(path: str | Path) -> str:
    return "file://" + str(path)


class FileStorage:
    storage_type = "file"

    def __init__(self, profile: FileProfile):
        self.profile = profile
        self._base = location_of(os.path.normpath(profile.root))

    def base_location(self) -> str:
        return self._base

    def normalize_location(self, location: str) -> str:
        parts = urlsplit(location)
        if parts.scheme == "file":
            # file:/x and file:///x are the same place; Spark writes the former
            return location_of(os.path.normpath(unquote(parts.path))).rstrip("/")
        return location.rstrip("/")

    def is_allowed_location(self, location: str) -> bool:
        return location.startswith("file:") and is_sublocation(
            self.normalize_location(location), self._base
        )

    async def write(self, location: str, data: bytes) -> None:
        path = path_of(location)

        def _write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{new_id()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)  # readers never see a half-written file

        await asyncio.to_thread(_write)

    async def read(self, location: str) -> bytes:
        return await asyncio.to_thread(path_of(location).read_bytes)

    async def exists(self, location: str) -> bool:
        # one stat() on a local disk costs microseconds, a hop to a worker thread ten times that;
        # loadTable asks on every call (a deleted metadata file must answer 404)
        return os.path.exists(path_of(location))

    async def delete(self, location: str) -> None:
        await asyncio.to_thread(lambda: path_of(location).unlink(missing_ok=True))

    async def list(self, prefix: str) -> AsyncIterator[str]:
        root = path_of(prefix)

        def _walk() -> list[str]:
            if root.is_file():
                return [location_of(root)]
            out = []
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
        root = path_of(prefix)

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
            # Called on every writable load: usually the directory is there and one stat() answers,
            # inline (a worker-thread hop costs more than the syscall).
            metadata_dir = path_of(join_location(request.table_location, "metadata"))
            if not metadata_dir.is_dir():
                try:
                    await asyncio.to_thread(metadata_dir.mkdir, parents=True, exist_ok=True)
                except OSError as exc:  # a courtesy to such writers: a load must not fail over it
                    log.debug("cannot create %s: %s", metadata_dir, exc)
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


def build_file_storage(profile: FileProfile, credential: None, ctx) -> FileStorage:
    return FileStorage(profile)


@hookimpl
def lakekeeper_storage_profiles():
    return [StorageSpec(storage_type="file", profile_cls=FileProfile, factory=build_file_storage)]
