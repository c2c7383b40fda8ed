"""Where namespaces and tables live in storage: the warehouse's storage layout and default locations."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from lakekeeper_host.errors import bad_request
from lakekeeper_host.service.storage import join_location
from lakekeeper_host.store.namespaces import NamespaceRow
from lakekeeper_host.store.warehouses import WarehouseRow

LOCATION_PROPERTY = "location"


def storage_layout(warehouse: WarehouseRow) -> dict[str, Any]:
    """The warehouse's ``storage-layout`` (Lakekeeper §2.8); the default is flat."""
    layout = warehouse.storage_profile.get("storage-layout") or {"type": "default"}
    return layout if isinstance(layout, dict) else {"type": "default"}


_LAYOUT_TEMPLATES = {"default": (), "tabular-only": ("tabular",), "full-hierarchy": ("namespace", "tabular")}


def validate_storage_layout(layout: Any) -> None:
    """400 for a ``storage-layout`` the location rules cannot use, naming the offending field.

    Templates may use ``{uuid}`` and ``{name}``; a tabular template must contain ``{uuid}`` (a
    re-created table of the same name must not land on the files of the dropped one), a namespace
    template at least one of the two.
    """
    if layout is None:
        return
    field_path = "storage-profile.storage-layout"
    if not isinstance(layout, dict) or layout.get("type") not in _LAYOUT_TEMPLATES:
        choices = ", ".join(_LAYOUT_TEMPLATES)
        raise bad_request(f"Invalid {field_path}: 'type' must be one of {choices}", "InvalidStorageLayout")
    allowed = _LAYOUT_TEMPLATES[layout["type"]]
    for key in layout:
        if key != "type" and key not in allowed:
            raise bad_request(
                f"Invalid {field_path}: unknown field {key!r} for type {layout['type']!r}", "InvalidStorageLayout"
            )
    for key in allowed:
        template = layout.get(key, "{uuid}")
        if not isinstance(template, str) or not template.strip() or "/" in template:
            raise bad_request(
                f"Invalid {field_path}.{key}: a non-empty path segment template is required", "InvalidStorageLayout"
            )
        needed = ("{uuid}",) if key == "tabular" else ("{uuid}", "{name}")
        if not any(placeholder in template for placeholder in needed):
            raise bad_request(
                f"Invalid {field_path}.{key}: the template must contain {' or '.join(needed)}",
                "InvalidStorageLayout",
            )


def render_layout_segment(template: str, *, name: str, uuid: str) -> str:
    return template.replace("{uuid}", uuid).replace("{name}", quote(name, safe=""))


def with_trailing_slash(location: str) -> str:
    return location if location.endswith("/") else location + "/"


def default_namespace_location(base: str, parent: NamespaceRow | None, name: str, namespace_id: str,
                               layout: dict[str, Any]) -> str:
    """Where a new namespace lives: the warehouse base (flat layouts) or below its parent."""
    if layout.get("type") == "full-hierarchy":
        parent_location = parent.properties.get(LOCATION_PROPERTY) if parent is not None else None
        segment = render_layout_segment(str(layout.get("namespace", "{uuid}")), name=name, uuid=namespace_id)
        return with_trailing_slash(join_location(parent_location or base, segment))
    return with_trailing_slash(base)
