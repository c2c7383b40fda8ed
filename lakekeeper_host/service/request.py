"""Who asks and from where: the request metadata the API layer hands to the server layer."""

from __future__ import annotations

from attrs import frozen

from lakekeeper_host.service.authz import ANONYMOUS, Actor


@frozen
class RequestMetadata:
    """One request's caller and context.

    ``actor`` None means an internal call (the embedded quickstart, task handlers, the console's
    own bookkeeping): the server layer allows it everything, as Lakekeeper does for its internal
    requests. Every HTTP request carries an actor (``ANONYMOUS`` without authentication).
    """

    request_id: str
    actor: Actor | None
    base_uri: str = ""  # e.g. http://host:8181 (no trailing slash), for self-links
    project_id: str | None = None  # from x-project-id
    user_agent: str = ""
    idempotency_key: str | None = None

    @property
    def is_internal(self) -> bool:
        return self.actor is None


def internal_request(
    request_id: str = "internal", *, base_uri: str = "", project_id: str | None = None
) -> RequestMetadata:
    """Metadata for work the server does on its own behalf."""
    return RequestMetadata(request_id=request_id, actor=None, base_uri=base_uri, project_id=project_id)


__all__ = ["ANONYMOUS", "RequestMetadata", "internal_request"]
