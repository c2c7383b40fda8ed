"""Lakekeeper storage plugin ``adls``: Azure Data Lake Storage Gen2 and Azure Blob Storage.

Registered through the entry point ``storage_adls`` in the group ``lakekeeper``. It contributes
the ``adls`` storage profile (alias ``azdls``) with ``az`` credentials (``shared-access-key``,
``client-credentials``, ``azure-system-identity``); the storage object it builds does the host's
object IO through the Blob API and vends SAS tokens scoped to one table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BuildContext, StorageSpec
from lakekeeper_storage_adls.model import (
    AdlsCredential,
    AdlsProfile,
    AdlsStorageConfig,
    ClientCredentialsCredential,
    SharedAccessKeyCredential,
    SystemIdentityCredential,
    register_wire_hooks,
)

if TYPE_CHECKING:
    from lakekeeper_storage_adls.storage import AdlsStorage

__version__ = "0.1.0"
__all__ = [
    "AdlsCredential",
    "AdlsProfile",
    "AdlsStorage",
    "AdlsStorageConfig",
    "ClientCredentialsCredential",
    "SharedAccessKeyCredential",
    "SystemIdentityCredential",
    "build_adls_storage",
]

register_wire_hooks()


def build_adls_storage(profile: AdlsProfile, credential: AdlsCredential | None, ctx: BuildContext) -> AdlsStorage:
    from lakekeeper_storage_adls.storage import AdlsStorage

    stc = ctx.settings.host.cache.stc
    return AdlsStorage(
        profile,
        credential,
        ctx.settings.section(AdlsStorageConfig),
        system_identity_enabled=ctx.settings.host.enable_azure_system_credentials,
        sas_cache_capacity=stc.capacity if stc.enabled else 0,
    )


@hookimpl
def lakekeeper_storage_profiles() -> list[StorageSpec]:
    return [
        StorageSpec(
            storage_type="adls",
            profile_cls=AdlsProfile,
            credential_cls=AdlsCredential,
            config_cls=AdlsStorageConfig,
            factory=build_adls_storage,
            aliases=("azdls", "az"),
        )
    ]


def __getattr__(name: str) -> Any:
    # the Azure SDK loads with the first ADLS warehouse, not when the host discovers the plugin
    if name == "AdlsStorage":
        from lakekeeper_storage_adls.storage import AdlsStorage

        return AdlsStorage
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
