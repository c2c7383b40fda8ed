"""Errors a client can see. Each renders as an Iceberg ErrorModel ``{"error": {...}}``."""

from __future__ import annotations

from typing import Any


class CatalogError(Exception):
    """An error with the HTTP status and Iceberg ``type`` that real clients map."""

    def __init__(self, code: int, type_: str, message: str, *, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.code = code
        self.type = type_
        self.message = message
        self.headers = headers or {}

    def to_model(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.type, "code": self.code}}

    def __repr__(self) -> str:
        return f"CatalogError({self.code}, {self.type!r}, {self.message!r})"


def bad_request(message: str, type_: str = "BadRequestException") -> CatalogError:
    return CatalogError(400, type_, message)


def illegal_argument(message: str) -> CatalogError:
    return CatalogError(400, "IllegalArgumentException", message)


def not_found(message: str, type_: str = "NotFoundException") -> CatalogError:
    return CatalogError(404, type_, message)


def no_such_namespace(namespace: tuple[str, ...] | list[str]) -> CatalogError:
    return CatalogError(
        404, "NoSuchNamespaceException", f"Namespace does not exist: {'.'.join(namespace)}"
    )


def no_such_table(namespace, name: str) -> CatalogError:
    return CatalogError(
        404, "NoSuchTableException", f"Table does not exist: {'.'.join(namespace)}.{name}"
    )


def no_such_view(namespace, name: str) -> CatalogError:
    return CatalogError(
        404, "NoSuchViewException", f"View does not exist: {'.'.join(namespace)}.{name}"
    )


def no_such_generic_table(namespace, name: str) -> CatalogError:
    return CatalogError(
        404, "NoSuchGenericTableException", f"Generic table does not exist: {'.'.join(namespace)}.{name}"
    )


def no_such_warehouse(message: str = "Warehouse does not exist") -> CatalogError:
    return CatalogError(404, "NoSuchWarehouseException", message)


def project_not_found(project_id: str) -> CatalogError:
    return CatalogError(404, "ProjectNotFound", f"Project {project_id} does not exist")


def already_exists(message: str, type_: str = "AlreadyExistsException") -> CatalogError:
    return CatalogError(409, type_, message)


def conflict(message: str, type_: str) -> CatalogError:
    return CatalogError(409, type_, message)


def commit_failed(message: str) -> CatalogError:
    return CatalogError(409, "CommitFailedException", message)


def commit_state_unknown(message: str) -> CatalogError:
    """A commit that may or may not have landed: clients keep their files instead of cleaning up."""
    return CatalogError(500, "CommitStateUnknownException", message)


def namespace_not_empty(namespace) -> CatalogError:
    # Lakekeeper's type (service/catalog_store/namespace.rs); Java's dropNamespace handler and PyIceberg's
    # drop_namespace map the 409 to their NamespaceNotEmpty exceptions by status
    return CatalogError(409, "NamespaceNotEmptyException", f"Namespace {'.'.join(namespace)} is not empty")


def unauthorized(message: str = "Authentication required") -> CatalogError:
    return CatalogError(
        401, "NotAuthorizedException", message, headers={"WWW-Authenticate": "Bearer"}
    )


def forbidden(message: str = "Forbidden") -> CatalogError:
    return CatalogError(403, "ForbiddenException", message)


def action_forbidden(kind: str, action: str, object_id: str) -> CatalogError:
    """Lakekeeper's 403 for an action the authorizer refused on an object the caller may see:
    ``TableActionForbidden``, ``NamespaceActionForbidden``, ... (``service/authz/<kind>.rs``). Clients
    map a 403 by its status (PyIceberg ``ForbiddenError``, Java ``ForbiddenException``)."""
    return CatalogError(403, f"{kind.replace('_', ' ').title().replace(' ', '')}ActionForbidden",
                        f"Not allowed to {action.replace('_', ' ')} on {kind} {object_id}")


def unsupported(message: str) -> CatalogError:
    return CatalogError(406, "UnsupportedOperationException", message)


def not_implemented(message: str) -> CatalogError:
    return CatalogError(501, "NotImplementedException", message)


def service_unavailable(message: str, type_: str = "ServiceUnavailableException") -> CatalogError:
    return CatalogError(503, type_, message)
