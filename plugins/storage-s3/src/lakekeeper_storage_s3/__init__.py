"""Lakekeeper storage plugin ``s3``: S3 and S3-compatible object stores.

Registered through the entry point ``storage_s3`` in the group ``lakekeeper``. It contributes
the ``s3`` storage profile (``access-key`` and ``aws-system-identity`` credentials); the storage
object it builds does the host's object IO, vends STS credentials scoped to one table, and signs
requests for the host's remote-signing routes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BuildContext, StorageSpec
from lakekeeper_storage_s3.cache import CredentialCache
from lakekeeper_storage_s3.model import (
    S3AccessKeyCredential,
    S3Credential,
    S3Profile,
    S3StorageConfig,
    S3SystemIdentityCredential,
    register_wire_hooks,
)

if TYPE_CHECKING:
    from lakekeeper_storage_s3.storage import S3Storage

__version__ = "0.1.0"
__all__ = [
    "CredentialCache",
    "S3AccessKeyCredential",
    "S3Credential",
    "S3Profile",
    "S3Storage",
    "S3StorageConfig",
    "S3SystemIdentityCredential",
    "build_s3_storage",
    "credential_cache",
]

register_wire_hooks()

# One STC cache per process, like Lakekeeper's per-cloud cache: entries are keyed by profile,
# credential, location and permission, so warehouses (and their versions) share it safely.
_CACHE = CredentialCache()


def credential_cache() -> CredentialCache:
    return _CACHE


def build_s3_storage(profile: S3Profile, credential: S3Credential | None, ctx: BuildContext) -> S3Storage:
    stc = ctx.settings.host.cache.stc
    _CACHE.configure(capacity=stc.capacity, enabled=stc.enabled)
    from lakekeeper_storage_s3.storage import S3Storage

    return S3Storage(profile, credential, ctx.settings.section(S3StorageConfig), _CACHE)


@hookimpl
def lakekeeper_storage_profiles() -> list[StorageSpec]:
    return [
        StorageSpec(
            storage_type="s3",
            profile_cls=S3Profile,
            credential_cls=S3Credential,
            config_cls=S3StorageConfig,
            factory=build_s3_storage,
        )
    ]


@hookimpl
def lakekeeper_startup(state: Any) -> None:
    """Count STC hits and misses in the server's Prometheus metrics."""
    metrics = state.metrics
    if metrics is not None:
        _CACHE.metrics = metrics


def __getattr__(name: str) -> Any:
    # boto3 loads with the first S3 warehouse, not when the host discovers the plugin
    if name == "S3Storage":
        from lakekeeper_storage_s3.storage import S3Storage

        return S3Storage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
