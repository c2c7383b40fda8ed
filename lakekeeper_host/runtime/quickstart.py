"""The embedded default: bootstrap, a default project and a ``demo`` file warehouse."""

from __future__ import annotations

import logging
import os

from lakekeeper_host.errors import CatalogError
from lakekeeper_host.server.management.tasks import ensure_task_log_cleanup
from lakekeeper_host.server.warehouses.create import CreateWarehouse, create_warehouse
from lakekeeper_host.service.state import AppState
from lakekeeper_host.store import projects as project_store
from lakekeeper_host.store import warehouses as warehouse_store
from lakekeeper_host.store.server import mark_bootstrapped

log = logging.getLogger(__name__)
DEMO_WAREHOUSE = "demo"


async def embedded_quickstart(state: AppState) -> None:
    """Idempotent: safe on every start and when several workers start at once."""

    host = state.settings.host
    if getattr(state.authorizer, "allows_all", False):
        await mark_bootstrapped(state.store)
    else:
        # an authorizer with grants needs an admin: POST /management/v1/bootstrap makes its caller one
        # (and the default project's admin), so the server stays open for it
        log.info("the %r authorizer waits for POST /management/v1/bootstrap", state.authorizer.name)
    project_id = host.default_project_id
    await project_store.create_project(state.store, project_id, "Default Project")

    await ensure_task_log_cleanup(state, project_id)
    if await warehouse_store.get_warehouse_by_name(state.store, project_id, DEMO_WAREHOUSE):
        return
    root = os.path.abspath(os.path.join(host.data_dir, "warehouses", DEMO_WAREHOUSE))
    os.makedirs(root, exist_ok=True)
    try:
        await create_warehouse(
            state,
            project_id,
            CreateWarehouse(warehouse_name=DEMO_WAREHOUSE, storage_profile={"type": "file", "root": root}),
        )
        log.info("created warehouse %r at %s", DEMO_WAREHOUSE, root)
    except CatalogError as exc:
        if exc.type == "InvalidStorageProfile":  # LAKEKEEPER__FILE_STORAGE_ALLOWED_ROOTS leaves the data dir out
            log.warning("not creating the %r warehouse: %s", DEMO_WAREHOUSE, exc.message)
        elif exc.type != "WarehouseAlreadyExists":  # another worker won the race
            raise
