"""Project resolution and management logic."""

from __future__ import annotations

import uuid

from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.service.state import AppState


def resolve_project_id(state: AppState, header_value: str | None, explicit: str | None = None) -> str:
    """Project from an explicit value, ``x-project-id``, or the default project."""
    project_id = explicit or header_value
    if project_id:
        try:
            return str(uuid.UUID(project_id))
        except ValueError:
            raise bad_request(f"Invalid project id {project_id!r}: expected a UUID", "InvalidProjectId") from None
    if state.settings.host.enable_default_project:
        return state.settings.host.default_project_id
    raise CatalogError(
        400, "NoProjectIdProvided", "No project given: set the x-project-id header (default project is disabled)"
    )
