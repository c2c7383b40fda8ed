"""``loadCredentials`` (``GET .../tables/{table}/credentials``): vended credentials for a table.

Clients call it to refresh credentials that expire (``client.refresh-credentials-endpoint``) and
PyIceberg's ``_load_credentials``. The answer is ``{"storage-credentials": [{prefix, config}]}``
-- empty when the warehouse's storage vends nothing (the ``file`` profile never does). The
endpoint exists to vend, so vended credentials are asked for even when the client's
``X-Iceberg-Access-Delegation`` header does not say so.

The credentials are scoped by the caller's data permission exactly as a load's are
(:func:`tables.data_permission`): read-only with ``read_data``, read-write-delete with
``write_data``; a caller with neither is refused (403), as in Lakekeeper.
"""

from __future__ import annotations

from typing import Any

from lakekeeper_host.errors import action_forbidden, no_such_table
from lakekeeper_host.server.authorize import authorize, data_permission
from lakekeeper_host.server.resolve import resolve_table
from lakekeeper_host.server.tables.load import access_request
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import DataAccess
from lakekeeper_host.store.warehouses import WarehouseRow


async def load_credentials(
    state: AppState, meta: RequestMetadata, warehouse: WarehouseRow, parts: list[str], name: str, access: DataAccess
) -> dict[str, Any]:
    # ------------------------------------------------ VALIDATIONS
    _, row = await resolve_table(state, warehouse, parts, name)

    # ------------------------------------------------ AUTHZ
    await authorize(state, meta, "get_metadata", "table", row.id, warehouse.id, hidden=no_such_table(parts, name))
    permission = await data_permission(state, meta, warehouse.id, row.id)
    if permission is None:
        raise action_forbidden("table", "read_data", row.id)

    # ------------------------------------------------ BUSINESS LOGIC
    storage = await state.storage_for(warehouse)
    request = access_request(
        meta, warehouse, parts, row.name, row, row.location, access | DataAccess.VENDED_CREDENTIALS, permission
    )
    config = await storage.table_config(request)
    return {"storage-credentials": list(config.storage_credentials)}
