"""Test-only storage type ``memory`` (Lakekeeper's test-utils MemoryProfile): objects in a dict."""

from __future__ import annotations

from typing import ClassVar

from attrs import frozen

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import StorageSpec
from lakekeeper_host.service.storage import TableConfig, ValidationProbes, is_sublocation

_OBJECTS: dict[str, dict[str, bytes]] = {}


@frozen
class MemoryProfile:
    storage_type: ClassVar[str] = "memory"
    bucket: str


class MemoryStorage:
    storage_type = "memory"

    def __init__(self, profile: MemoryProfile):
        self.profile = profile
        self.objects = _OBJECTS.setdefault(profile.bucket, {})

    def base_location(self) -> str:
        return f"memory://{self.profile.bucket}"

    def normalize_location(self, location: str) -> str:
        return location.rstrip("/")

    def is_allowed_location(self, location: str) -> bool:
        return is_sublocation(location, self.base_location())

    async def write(self, location, data):
        self.objects[location] = data

    async def read(self, location):
        return self.objects[location]

    async def exists(self, location):
        return location in self.objects

    async def delete(self, location):
        self.objects.pop(location, None)

    async def list(self, prefix):
        for key in sorted(self.objects):
            if is_sublocation(key, prefix):
                yield key

    async def is_empty(self, prefix):
        return not any(is_sublocation(k, prefix) for k in self.objects)

    async def delete_prefix(self, prefix):
        doomed = [k for k in self.objects if is_sublocation(k, prefix)]
        for key in doomed:
            del self.objects[key]
        return len(doomed)

    async def table_config(self, request):
        return TableConfig()

    def catalog_defaults(self, *, soft_delete_enabled):
        return {}

    def endpoints(self):
        return ()

    def validation_probes(self):
        async def connect():
            return None

        return ValidationProbes(connect=connect)

    def immutable_fields(self):
        return ("bucket",)

    async def close(self):
        return None


@hookimpl
def lakekeeper_storage_profiles():
    return [
        StorageSpec(storage_type="memory", profile_cls=MemoryProfile, factory=lambda p, c, ctx: MemoryStorage(p))
    ]
