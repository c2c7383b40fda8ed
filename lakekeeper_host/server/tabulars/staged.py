"""A staged table (``stage-create``, not committed yet) gives way to a table or view created or
renamed under its name (Lakekeeper). It goes for good: its authorizer records (parent link,
ownership, grants) go too, or they would outlive it in OpenFGA.

The id of a staged table that is later *committed* stays: the commit un-stages the same row.
"""

from __future__ import annotations

from lakekeeper_host.server.authorize import deleted
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.db import Executor


async def remove_staged(tx: Executor, namespace_id: str, name: str) -> str | None:
    """Inside the transaction that takes the name: remove the staged table; its id, if there was one."""
    replaced = await tabular_store.delete_staged(tx, namespace_id, name)
    return None if replaced is None else replaced.id


async def forget_staged(state: AppState, staged_id: str | None, warehouse_id: str) -> None:
    """After the commit: tell the authorizer the replaced staged table is gone."""
    if staged_id is not None:
        await deleted(state, "table", [staged_id], warehouse_id)
