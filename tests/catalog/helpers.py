"""Helpers of the catalog tests: a thin raw-HTTP Iceberg REST client and schema builders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from lakekeeper_testing.services import wait_for  # noqa: F401 - the tests import it from here

SEP = "\x1f"

SCHEMA = {
    "type": "struct",
    "schema-id": 0,
    "fields": [
        {"id": 1, "name": "id", "type": "int", "required": True},
        {"id": 2, "name": "data", "type": "string", "required": False},
    ],
}


def schema(*fields: tuple[str, str], schema_id: int = 0, first_id: int = 1) -> dict[str, Any]:
    return {
        "type": "struct",
        "schema-id": schema_id,
        "fields": [
            {"id": first_id + i, "name": name, "type": typ, "required": False} for i, (name, typ) in enumerate(fields)
        ],
    }


def ns_path(parts: Sequence[str] | str) -> str:
    """A namespace as a URL path segment (PyIceberg's encoding: quoted parts joined by %1F)."""
    if isinstance(parts, str):
        parts = [parts]
    return "%1F".join(quote(p, safe="") for p in parts)


def name_path(name: str) -> str:
    return quote(name, safe="")


class Rest:
    """Raw HTTP against one warehouse (``/catalog/v1/{prefix}``)."""

    def __init__(self, server_url: str, warehouse_id: str):
        self.http = httpx.Client(base_url=f"{server_url}/catalog/v1/{warehouse_id}", timeout=60)
        self.prefix = warehouse_id

    def close(self) -> None:
        self.http.close()

    # namespaces
    def create_namespace(self, parts: Sequence[str] | str, properties: dict[str, str] | None = None) -> httpx.Response:
        parts = [parts] if isinstance(parts, str) else list(parts)
        return self.http.post("/namespaces", json={"namespace": parts, "properties": properties or {}})

    # tables
    def table_url(self, namespace: Sequence[str] | str, name: str) -> str:
        return f"/namespaces/{ns_path(namespace)}/tables/{name_path(name)}"

    def create_table(
        self, namespace: Sequence[str] | str, name: str, schema: dict | None = None, **extra: Any
    ) -> httpx.Response:
        body = {"name": name, "schema": schema or SCHEMA, **{k.replace("_", "-"): v for k, v in extra.items()}}
        return self.http.post(f"/namespaces/{ns_path(namespace)}/tables", json=body)

    def load(self, namespace: Sequence[str] | str, name: str, **params: Any) -> httpx.Response:
        return self.http.get(self.table_url(namespace, name), params=params)

    def metadata(self, namespace: Sequence[str] | str, name: str) -> dict[str, Any]:
        response = self.load(namespace, name)
        assert response.status_code == 200, response.text
        return response.json()["metadata"]

    def commit(
        self, namespace: Sequence[str] | str, name: str, updates: list[dict], requirements: list[dict] | None = None
    ) -> httpx.Response:
        body: dict[str, Any] = {"updates": updates}
        if requirements is not None:
            body["requirements"] = requirements
        return self.http.post(self.table_url(namespace, name), json=body)

    def transaction(self, changes: list[dict]) -> httpx.Response:
        return self.http.post("/transactions/commit", json={"table-changes": changes})


def error(response: httpx.Response) -> dict[str, Any]:
    """The ``error`` object of an Iceberg error response (asserting the shape)."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) >= {"message", "type", "code"}, body
    assert body["error"]["code"] == response.status_code
    return body["error"]
