"""Lakekeeper secret store ``kv2`` (alias ``vault``): storage credentials in Vault / OpenBao KV v2.

Registered through the entry point ``secrets_vault`` in the group ``lakekeeper``; selected with
``LAKEKEEPER__SECRET_BACKEND=kv2`` and configured by ``LAKEKEEPER__KV2__*`` (see ``config.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec, BuildContext
from lakekeeper_secrets_vault.config import Kv2Config, Kv2Settings

if TYPE_CHECKING:
    from lakekeeper_secrets_vault.store import VaultKv2Store

__version__ = "0.1.0"
__all__ = ["Kv2Config", "Kv2Settings", "VaultKv2Store"]


async def build_store(config: Kv2Settings, ctx: BuildContext) -> VaultKv2Store:
    if not ctx.server_id:  # pragma: no cover - the host always passes it
        raise ValueError("the KV2 secret store needs the server id for its per-server path")
    from lakekeeper_secrets_vault.store import VaultKv2Store

    return await VaultKv2Store(config.require(), ctx.server_id).start()


def __getattr__(name: str) -> Any:
    # hvac (and requests) load when the store is used, not when the host discovers the plugin
    if name == "VaultKv2Store":
        from lakekeeper_secrets_vault.store import VaultKv2Store

        return VaultKv2Store
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@hookimpl
def lakekeeper_secret_stores():
    return [BackendSpec(name="kv2", aliases=("vault",), factory=build_store, config_cls=Kv2Settings)]
