"""The one place that turns committed mutations into CloudEvents (Lakekeeper §7).

Every function here builds the events of one mutation and hands them to the dispatcher with
``state.events.publish`` -- call it AFTER the database commit (never inside the transaction):
publishing only enqueues, so it never blocks or fails the request. Each function returns the
events it published.

Wire format, as Lakekeeper's ``CloudEventsPublisher``: CloudEvents v1.0, ``id`` a UUIDv7,
``source`` ``uri:iceberg-catalog-service:<hostname>``, ``datacontenttype`` ``application/json``,
and the extension attributes ``tabular-type``, ``tabular-id``, ``warehouse-id``, ``name``,
``namespace`` (parts joined by ``\\x1f``, the URL form), ``prefix``, ``num-events``,
``sequence-number`` (index within a multi-table commit), ``trace-id`` (the request id) and
``actor`` (JSON text of ``Actor.describe()``).

Type names of tabular events are Lakekeeper's (``createTable``, ``updateTable``, ...).
Lakekeeper emits no CloudEvents for namespaces and warehouses; ours (``createNamespace``,
``dropNamespace``, ``updateNamespaceProperties``, ``moveNamespace``, ``createWarehouse``, ``deleteWarehouse``...)
follow the same naming and carry ``namespace-id`` / ``project-id`` instead of the tabular ones.
Grants (``createGrant``, ``revokeGrant``: one event per grant that changed, as Lakekeeper's
``grant_created`` / ``grant_revoked`` audit events) carry ``resource-type`` and ``resource-id``.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from lakekeeper_host.ids import new_id
from lakekeeper_host.server import kinds
from lakekeeper_host.service.authz import Assignment, Resource
from lakekeeper_host.service.events import CloudEvent, utc_now_iso
from lakekeeper_host.service.request import RequestMetadata

if TYPE_CHECKING:
    from lakekeeper_host.service.state import AppState

NAMESPACE_SEPARATOR = "\x1f"


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


# a warehouse given as its row (anything with ``.id``) or as its id
Warehouse = _HasId | str
# a namespace as its parts, or as the parts joined by NAMESPACE_SEPARATOR
Namespace = str | Sequence[str]

# event types (Lakekeeper's names for tabulars)
CREATE_TABLE = "createTable"
REGISTER_TABLE = "registerTable"
UPDATE_TABLE = "updateTable"
DROP_TABLE = "dropTable"
RENAME_TABLE = "renameTable"
CREATE_VIEW = "createView"
UPDATE_VIEW = "updateView"
DROP_VIEW = "dropView"
RENAME_VIEW = "renameView"
CREATE_GENERIC_TABLE = "createGenericTable"
DROP_GENERIC_TABLE = "dropGenericTable"
RENAME_GENERIC_TABLE = "renameGenericTable"
UNDROP_TABULARS = "undropTabulars"
CREATE_NAMESPACE = "createNamespace"
DROP_NAMESPACE = "dropNamespace"
UPDATE_NAMESPACE_PROPERTIES = "updateNamespaceProperties"
MOVE_NAMESPACE = "moveNamespace"
CREATE_WAREHOUSE = "createWarehouse"
DELETE_WAREHOUSE = "deleteWarehouse"
RENAME_WAREHOUSE = "renameWarehouse"
CREATE_GRANT = "createGrant"
REVOKE_GRANT = "revokeGrant"


@lru_cache(maxsize=1)
def event_source() -> str:
    try:
        host = socket.gethostname() or "hostname-unavailable"
    except OSError:
        host = "hostname-unavailable"
    return f"uri:iceberg-catalog-service:{host}"


def namespace_url(namespace: str | Sequence[str] | None) -> str | None:
    """``["a", "b"]`` -> ``"a\\x1fb"`` (strings are taken as already joined)."""
    if namespace is None:
        return None
    if isinstance(namespace, str):
        return namespace
    return NAMESPACE_SEPARATOR.join(str(part) for part in namespace)


def _id_of(entity: Warehouse) -> str:
    """A warehouse/tabular given as a row object (``.id``) or as its id."""
    return str(getattr(entity, "id", entity))


def _actor_json(meta: RequestMetadata) -> str:
    actor = getattr(meta, "actor", None)
    described = actor.describe() if actor is not None else {"type": "anonymous"}
    return json.dumps(described, separators=(",", ":"))


def build_event(
    meta: RequestMetadata,
    type: str,
    data: Any = None,
    *,
    warehouse_id: str | None,
    tabular_type: str | None = None,
    tabular_id: str | None = None,
    namespace: str | Sequence[str] | None = None,
    name: str | None = None,
    prefix: str | None = None,
    sequence_number: int = 0,
    num_events: int = 1,
    extra: dict[str, Any] | None = None,
) -> CloudEvent:
    """One CloudEvent with Lakekeeper's extension attributes; ``meta`` is the RequestMetadata.
    ``warehouse_id`` None (a change above any warehouse): no ``warehouse-id`` and no ``prefix``."""
    extensions: dict[str, Any] = {}
    if tabular_type is not None:
        extensions["tabular-type"] = tabular_type
    if tabular_id is not None:
        extensions["tabular-id"] = str(tabular_id)
    if warehouse_id is not None:
        extensions["warehouse-id"] = str(warehouse_id)
    if name is not None:
        extensions["name"] = name
    if namespace is not None:
        extensions["namespace"] = namespace_url(namespace)
    if prefix is not None or warehouse_id is not None:
        extensions["prefix"] = prefix if prefix is not None else str(warehouse_id)
    extensions["num-events"] = num_events
    extensions["sequence-number"] = sequence_number
    extensions["trace-id"] = str(getattr(meta, "request_id", "") or "")
    extensions["actor"] = _actor_json(meta)
    if extra:
        extensions.update({k: v for k, v in extra.items() if v is not None})
    return CloudEvent(
        id=new_id(),
        source=event_source(),
        type=type,
        data=data,
        time=utc_now_iso(),
        extensions=extensions,
    )


def _publish(state: AppState, events: list[CloudEvent]) -> list[CloudEvent]:
    if events:
        state.events.publish(events)
    return events


def _tabular_event(
    state: AppState,
    meta: RequestMetadata,
    type: str,
    tabular_type: str,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any,
    prefix: str | None,
) -> list[CloudEvent]:
    event = build_event(
        meta,
        type,
        data,
        warehouse_id=_id_of(warehouse),
        tabular_type=tabular_type,
        tabular_id=tabular_id,
        namespace=namespace,
        name=name,
        prefix=prefix,
    )
    return _publish(state, [event])


# ---------------------------------------------------------------- tables


def table_created(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``createTable``; ``data`` is the create request JSON."""
    return _tabular_event(state, meta, CREATE_TABLE, "table", warehouse, namespace, name, tabular_id, data, prefix)


def table_registered(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``registerTable``; ``data`` is the register request JSON."""
    return _tabular_event(state, meta, REGISTER_TABLE, "table", warehouse, namespace, name, tabular_id, data, prefix)


def table_dropped(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``dropTable``; ``data`` is null."""
    return _tabular_event(state, meta, DROP_TABLE, "table", warehouse, namespace, name, tabular_id, None, prefix)


def table_renamed(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``renameTable``; ``namespace``/``name`` are the SOURCE identifier, ``data`` the rename request."""
    return _tabular_event(state, meta, RENAME_TABLE, "table", warehouse, namespace, name, tabular_id, data, prefix)


def table_updated(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``updateTable`` for a single-table commit (see :func:`tables_updated` for transactions)."""
    return tables_updated(state, meta, warehouse, [(namespace, name, tabular_id, data)], prefix=prefix)


def tables_updated(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    commits: Iterable[tuple[str | Sequence[str], str, str, Any]],
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """One ``updateTable`` per table of a (multi-table) commit, in request order.

    ``commits`` holds ``(namespace, name, tabular_id, commit_request_json)``; each event's
    ``data`` is that table's CommitTableRequest (``identifier``, ``requirements``, ``updates``)
    and it carries ``sequence-number`` (0-based index) and ``num-events``.
    """
    items = list(commits)
    events: list[CloudEvent] = []
    for index, (namespace, name, tabular_id, data) in enumerate(items):
        body = dict(data) if isinstance(data, dict) else {"requirements": [], "updates": []}
        if not body.get("identifier"):
            parts = namespace.split(NAMESPACE_SEPARATOR) if isinstance(namespace, str) else list(namespace)
            body = {"identifier": {"namespace": parts, "name": name}, **body}
        events.append(
            build_event(
                meta,
                UPDATE_TABLE,
                body,
                warehouse_id=_id_of(warehouse),
                tabular_type="table",
                tabular_id=tabular_id,
                namespace=namespace,
                name=name,
                prefix=prefix,
                sequence_number=index,
                num_events=len(items),
            )
        )
    return _publish(state, events)


# ---------------------------------------------------------------- views


def view_created(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``createView``; ``data`` is the create request JSON."""
    return _tabular_event(state, meta, CREATE_VIEW, "view", warehouse, namespace, name, tabular_id, data, prefix)


def view_updated(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``updateView``; ``data`` is the commit (replace) request JSON."""
    return _tabular_event(state, meta, UPDATE_VIEW, "view", warehouse, namespace, name, tabular_id, data, prefix)


def view_dropped(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``dropView``; ``data`` is null."""
    return _tabular_event(state, meta, DROP_VIEW, "view", warehouse, namespace, name, tabular_id, None, prefix)


def view_renamed(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``renameView``; ``namespace``/``name`` are the SOURCE identifier, ``data`` the rename request."""
    return _tabular_event(state, meta, RENAME_VIEW, "view", warehouse, namespace, name, tabular_id, data, prefix)


# ---------------------------------------------------------------- generic tables (tabular-type generic-table)

GENERIC = kinds.wire(kinds.GENERIC_TABLE)


def generic_table_created(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``createGenericTable``; ``data`` is the create request JSON."""
    return _tabular_event(
        state, meta, CREATE_GENERIC_TABLE, GENERIC, warehouse, namespace, name, tabular_id, data, prefix
    )


def generic_table_dropped(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``dropGenericTable``; ``data`` is null."""
    return _tabular_event(
        state, meta, DROP_GENERIC_TABLE, GENERIC, warehouse, namespace, name, tabular_id, None, prefix
    )


def generic_table_renamed(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``renameGenericTable``; ``namespace``/``name`` are the SOURCE identifier, ``data`` the rename request."""
    return _tabular_event(
        state, meta, RENAME_GENERIC_TABLE, GENERIC, warehouse, namespace, name, tabular_id, data, prefix
    )


def tabular_dropped(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    tabular_type: str,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``dropTable``, ``dropView`` or ``dropGenericTable`` by ``tabular_type`` (a kind)."""
    fn = {kinds.VIEW: view_dropped, kinds.GENERIC_TABLE: generic_table_dropped}.get(tabular_type, table_dropped)
    return fn(state, meta, warehouse, namespace, name, tabular_id, prefix=prefix)


def tabular_renamed(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    name: str,
    tabular_id: str,
    tabular_type: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``renameTable``, ``renameView`` or ``renameGenericTable`` by ``tabular_type`` (a kind)."""
    fn = {kinds.VIEW: view_renamed, kinds.GENERIC_TABLE: generic_table_renamed}.get(tabular_type, table_renamed)
    return fn(state, meta, warehouse, namespace, name, tabular_id, data, prefix=prefix)


# ---------------------------------------------------------------- undrop


def tabulars_undropped(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    tabulars: Iterable[Any],
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """One ``undropTabulars`` per restored tabular (``sequence-number``/``num-events`` set).

    ``tabulars`` holds objects or dicts with ``id``, ``name``, ``typ`` (a kind: ``table``, ``view``,
    ``generic_table``) and ``namespace`` (list of parts or joined string).
    """
    items = list(tabulars)

    def get(item: Any, key: str, default: Any = None) -> Any:
        return item.get(key, default) if isinstance(item, dict) else getattr(item, key, default)

    events = [
        build_event(
            meta,
            UNDROP_TABULARS,
            None,
            warehouse_id=_id_of(warehouse),
            tabular_type=kinds.wire(str(get(item, "typ", None) or get(item, "type", "table"))),
            tabular_id=str(get(item, "id")),
            namespace=get(item, "namespace", None),
            name=get(item, "name"),
            prefix=prefix,
            sequence_number=index,
            num_events=len(items),
        )
        for index, item in enumerate(items)
    ]
    return _publish(state, events)


# ---------------------------------------------------------------- namespaces


def namespace_created(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    namespace_id: str,
    properties: Mapping[str, str] | None = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``createNamespace``; ``data`` is ``{"namespace": [...], "properties": {...}}``."""
    parts = _parts(namespace)
    data = {"namespace": parts, "properties": dict(properties or {})}
    return _namespace_event(state, meta, CREATE_NAMESPACE, warehouse, parts, namespace_id, data, prefix)


def namespace_dropped(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    namespace_id: str,
    data: Any = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``dropNamespace``; ``data`` may carry the drop flags (``recursive``, ``purge``, ``force``)."""
    return _namespace_event(state, meta, DROP_NAMESPACE, warehouse, _parts(namespace), namespace_id, data, prefix)


def namespace_properties_updated(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    namespace: Namespace,
    namespace_id: str,
    updates: Mapping[str, str] | None = None,
    removals: Iterable[str] | None = None,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``updateNamespaceProperties``; ``data`` is ``{"updates": {...}, "removals": [...]}``."""
    data = {"updates": dict(updates or {}), "removals": list(removals or [])}
    return _namespace_event(
        state, meta, UPDATE_NAMESPACE_PROPERTIES, warehouse, _parts(namespace), namespace_id, data, prefix
    )


def namespace_moved(
    state: AppState,
    meta: RequestMetadata,
    warehouse: Warehouse,
    source: Namespace,
    namespace_id: str,
    destination: Namespace,
    *,
    prefix: str | None = None,
) -> list[CloudEvent]:
    """``moveNamespace`` (move or rename); ``namespace``/``name`` are the SOURCE path, as for
    ``renameTable``, and ``data`` is ``{"source": [...], "destination": [...]}``."""
    parts = _parts(source)
    data = {"source": parts, "destination": _parts(destination)}
    return _namespace_event(state, meta, MOVE_NAMESPACE, warehouse, parts, namespace_id, data, prefix)


def _parts(namespace: str | Sequence[str]) -> list[str]:
    return namespace.split(NAMESPACE_SEPARATOR) if isinstance(namespace, str) else [str(p) for p in namespace]


def _namespace_event(
    state: AppState,
    meta: RequestMetadata,
    type: str,
    warehouse: Warehouse,
    parts: list[str],
    namespace_id: str | None,
    data: Any,
    prefix: str | None,
) -> list[CloudEvent]:
    event = build_event(
        meta,
        type,
        data,
        warehouse_id=_id_of(warehouse),
        namespace=parts,
        name=parts[-1] if parts else None,
        prefix=prefix,
        extra={"namespace-id": str(namespace_id) if namespace_id is not None else None},
    )
    return _publish(state, [event])


# ---------------------------------------------------------------- warehouses


def warehouse_created(
    state: AppState, meta: RequestMetadata, warehouse_id: str, name: str, project_id: str | None, data: Any = None
) -> list[CloudEvent]:
    """``createWarehouse``; ``data`` should be free of secrets (no storage credential)."""
    return _warehouse_event(state, meta, CREATE_WAREHOUSE, warehouse_id, name, project_id, data)


def warehouse_deleted(
    state: AppState, meta: RequestMetadata, warehouse_id: str, name: str, project_id: str | None
) -> list[CloudEvent]:
    """``deleteWarehouse``; ``data`` is null."""
    return _warehouse_event(state, meta, DELETE_WAREHOUSE, warehouse_id, name, project_id, None)


def warehouse_renamed(
    state: AppState,
    meta: RequestMetadata,
    warehouse_id: str,
    new_name: str,
    project_id: str | None,
    old_name: str | None = None,
) -> list[CloudEvent]:
    """``renameWarehouse``; ``name`` is the new name, ``data`` ``{"old-name", "new-name"}``."""
    data = {"old-name": old_name, "new-name": new_name}
    return _warehouse_event(state, meta, RENAME_WAREHOUSE, warehouse_id, new_name, project_id, data)


def _warehouse_event(
    state: AppState,
    meta: RequestMetadata,
    type: str,
    warehouse_id: str,
    name: str,
    project_id: str | None,
    data: Any,
) -> list[CloudEvent]:
    event = build_event(
        meta,
        type,
        data,
        warehouse_id=str(warehouse_id),
        name=name,
        prefix=str(warehouse_id),
        extra={"project-id": str(project_id) if project_id is not None else None},
    )
    return _publish(state, [event])


# ---------------------------------------------------------------- grants


def grants_changed(
    state: AppState,
    meta: RequestMetadata,
    resource: Resource,
    resource_data: dict[str, Any],
    created: Sequence[Assignment],
    revoked: Sequence[Assignment],
) -> list[CloudEvent]:
    """``createGrant`` / ``revokeGrant``, one per grant that changed (a revoked grant is gone, so its
    event is the only record that it existed); ``data`` ``{"principal", "privilege", "resource"}``."""
    changes = [(CREATE_GRANT, a) for a in created] + [(REVOKE_GRANT, a) for a in revoked]
    events = [
        build_event(
            meta,
            type,
            {"principal": {a.principal.kind: a.principal.id}, "privilege": a.relation, "resource": resource_data},
            warehouse_id=resource.warehouse_id,
            sequence_number=index,
            num_events=len(changes),
            extra={"resource-type": resource.kind, "resource-id": resource.id},
        )
        for index, (type, a) in enumerate(changes)
    ]
    return _publish(state, events)
