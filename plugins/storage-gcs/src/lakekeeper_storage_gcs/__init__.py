"""Lakekeeper storage plugin ``gcs``: Google Cloud Storage.

Registered through the entry point ``storage_gcs`` in the group ``lakekeeper``. It contributes the
``gcs`` storage profile (``service-account-key`` and ``gcp-system-identity`` credentials); the
storage object it builds does the host's object IO and vends OAuth2 tokens downscoped to one table
with a Credential Access Boundary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BuildContext, StorageSpec
from lakekeeper_storage_gcs.model import (
    GcsCredential,
    GcsProfile,
    GcsServiceAccountKeyCredential,
    GcsStorageConfig,
    GcsSystemIdentityCredential,
    register_wire_hooks,
)
from lakekeeper_storage_gcs.sts import TokenCache

if TYPE_CHECKING:
    from lakekeeper_storage_gcs.storage import GcsStorage

__version__ = "0.1.0"
__all__ = [
    "GcsCredential",
    "GcsProfile",
    "GcsServiceAccountKeyCredential",
    "GcsStorage",
    "GcsStorageConfig",
    "GcsSystemIdentityCredential",
    "build_gcs_storage",
    "token_cache",
]

register_wire_hooks()

# One cache of downscoped tokens per process; keys carry location, permission and credential.
_CACHE = TokenCache()


def token_cache() -> TokenCache:
    return _CACHE


def build_gcs_storage(profile: GcsProfile, credential: GcsCredential | None, ctx: BuildContext) -> GcsStorage:
    stc = ctx.settings.host.cache.stc
    _CACHE.configure(capacity=stc.capacity, enabled=stc.enabled)
    from lakekeeper_storage_gcs.storage import GcsStorage

    return GcsStorage(
        profile,
        credential,
        ctx.settings.section(GcsStorageConfig),
        _CACHE,
        system_identity_enabled=ctx.settings.host.enable_gcp_system_credentials,
    )


@hookimpl
def lakekeeper_storage_profiles() -> list[StorageSpec]:
    return [
        StorageSpec(
            storage_type="gcs",
            profile_cls=GcsProfile,
            credential_cls=GcsCredential,
            config_cls=GcsStorageConfig,
            factory=build_gcs_storage,
        )
    ]


def __getattr__(name: str) -> Any:
    # google-cloud-storage loads with the first GCS warehouse, not when the host discovers the plugin
    if name == "GcsStorage":
        from lakekeeper_storage_gcs.storage import GcsStorage

        return GcsStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
