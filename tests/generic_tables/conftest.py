"""Fixtures of the Generic Table API tests: raw HTTP on ``/lakekeeper/v1/{warehouse}`` and
Lakekeeper's own Python client (``pylakekeeper``) on the fresh warehouse of the shared server."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.catalog.helpers import ns_path


class GenericTables:
    """Raw HTTP against one warehouse's Generic Table API."""

    def __init__(self, server_url: str, warehouse_id: str):
        self.http = httpx.Client(base_url=f"{server_url}/lakekeeper/v1/{warehouse_id}", timeout=60)
        self.catalog = httpx.Client(base_url=f"{server_url}/catalog/v1/{warehouse_id}", timeout=60)
        self.management = httpx.Client(base_url=server_url, timeout=60)
        self.warehouse_id = warehouse_id

    def close(self) -> None:
        for client in (self.http, self.catalog, self.management):
            client.close()

    def namespace(self, *parts: str) -> None:
        """Create the namespace ``parts`` and its missing parents."""
        for depth in range(1, len(parts) + 1):
            response = self.catalog.post("/namespaces", json={"namespace": list(parts[:depth])})
            assert response.status_code == 200 or (response.status_code == 409 and depth < len(parts)), response.text

    @staticmethod
    def collection(namespace: Sequence[str] | str) -> str:
        return f"/namespaces/{ns_path(namespace)}/generic-tables"

    def url(self, namespace: Sequence[str] | str, name: str) -> str:
        return f"{self.collection(namespace)}/{quote(name, safe='')}"

    def create(self, namespace: Sequence[str] | str, name: str, format: str = "lance", **fields: Any) -> httpx.Response:
        body = {"name": name, "format": format, **{k.replace("_", "-"): v for k, v in fields.items()}}
        return self.http.post(self.collection(namespace), json=body)

    def load(self, namespace: Sequence[str] | str, name: str, **headers: str) -> httpx.Response:
        return self.http.get(self.url(namespace, name), headers=headers)

    def drop(self, namespace: Sequence[str] | str, name: str, **params: str) -> httpx.Response:
        return self.http.delete(self.url(namespace, name), params=params)

    def rename(self, source: tuple[list[str], str], destination: tuple[list[str], str]) -> httpx.Response:
        return self.http.post("/generic-tables/rename", json={
            "source": {"namespace": source[0], "name": source[1]},
            "destination": {"namespace": destination[0], "name": destination[1]},
        })

    def names(self, namespace: Sequence[str] | str, **params: Any) -> list[str]:
        response = self.http.get(self.collection(namespace), params=params)
        assert response.status_code == 200, response.text
        return [i["name"] for i in response.json()["identifiers"]]


@pytest.fixture
def gt(server, warehouse) -> Iterator[GenericTables]:
    client = GenericTables(server.url, warehouse["id"])
    yield client
    client.close()


@pytest.fixture
def lk(server, warehouse):
    """``pylakekeeper.Client`` on the fresh warehouse (the server has no identity provider: any token)."""
    import pylakekeeper

    with pylakekeeper.Client(base_url=server.url, warehouse=warehouse["id"],
                             auth=pylakekeeper.StaticToken("no-idp")) as client:
        yield client
