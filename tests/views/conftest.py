"""A REST view client that sends what Iceberg Java's ``RESTViewBuilder``/``ViewVersionReplace`` send.

PyIceberg 0.12 can create, load, list, drop and register views but cannot replace or rename them,
so the port of ViewCatalogTests speaks HTTP itself, building the same requests (and the same
client-side updates: ``add-schema`` only for a new schema, ``add-view-version`` with schema id
``-1`` when that schema was just added, ``set-current-view-version -1``, ``assert-view-uuid``).
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import httpx
import pytest


class RestError(Exception):
    def __init__(self, status: int, body: dict[str, Any]):
        error = (body or {}).get("error", {})
        self.status = status
        self.type = error.get("type")
        self.message = error.get("message", "")
        super().__init__(f"{status} {self.type}: {self.message}")


def _ns(namespace) -> str:
    return quote("\x1f".join(namespace), safe="")


def _same_schema(one: dict, two: dict) -> bool:
    def strip(schema):
        return (schema.get("fields"), sorted(schema.get("identifier-field-ids") or []))

    return strip(one) == strip(two)


class ViewClient:
    Error = RestError

    def __init__(self, http: httpx.Client, prefix_url: str):
        self.http = http
        self.base = prefix_url

    # ------------------------------------------------ plumbing

    def _call(self, method: str, url: str, **kwargs) -> httpx.Response:
        response = self.http.request(method, url, **kwargs)
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = {}
            raise RestError(response.status_code, body)
        return response

    def view_url(self, ident) -> str:
        namespace, name = ident
        return f"{self.base}/namespaces/{_ns(namespace)}/views/{quote(name, safe='')}"

    # ------------------------------------------------ operations

    def exists(self, ident) -> bool:
        return self.http.head(self.view_url(ident)).status_code == 204

    def table_exists(self, ident) -> bool:
        namespace, name = ident
        url = f"{self.base}/namespaces/{_ns(namespace)}/tables/{quote(name, safe='')}"
        return self.http.head(url).status_code == 204

    def load(self, ident) -> dict:
        return self._call("GET", self.view_url(ident)).json()

    def drop(self, ident) -> bool:
        try:
            self._call("DELETE", self.view_url(ident))
            return True
        except RestError as error:
            if error.status == 404:
                return False
            raise

    def list(self, namespace, page_size: int | None = None) -> list[tuple[tuple[str, ...], str]]:
        found, token = [], None
        while True:
            params = {}
            if page_size is not None:
                params = {"pageSize": page_size, "pageToken": token or ""}
            body = self._call("GET", f"{self.base}/namespaces/{_ns(namespace)}/views", params=params).json()
            found += [(tuple(i["namespace"]), i["name"]) for i in body["identifiers"]]
            token = body.get("next-page-token")
            if not token:
                return found

    def create(
        self, ident, *, schema: dict, queries, default_namespace=None, default_catalog=None,
        properties=None, location=None,
    ) -> dict:
        namespace, name = ident
        body = {
            "name": name,
            "schema": schema,
            "view-version": self.version(
                1, schema["schema-id"], queries, default_namespace or namespace, default_catalog, "create"
            ),
            "properties": properties or {},
        }
        if location is not None:
            body["location"] = location
        return self._call("POST", f"{self.base}/namespaces/{_ns(namespace)}/views", json=body).json()

    @staticmethod
    def version(version_id, schema_id, queries, default_namespace, default_catalog, operation) -> dict:
        version = {
            "version-id": version_id,
            "schema-id": schema_id,
            "timestamp-ms": int(time.time() * 1000),
            "summary": {"operation": operation, "engine-name": "pytest"},
            "representations": [{"type": "sql", "dialect": d, "sql": q} for d, q in queries],
            "default-namespace": list(default_namespace),
        }
        if default_catalog is not None:
            version["default-catalog"] = default_catalog
        return version

    def replace_changes(
        self, base: dict, *, schema: dict, queries, default_namespace, default_catalog=None,
        properties=None, location=None,
    ) -> tuple[list, list]:
        """(requirements, updates) of a replace computed against ``base`` (a LoadViewResult)."""
        metadata = base["metadata"]
        updates: list[dict] = []
        if properties:
            updates.append({"action": "set-properties", "updates": properties})
        if location is not None and location != metadata["location"]:
            updates.append({"action": "set-location", "location": location})
        existing = next((s for s in metadata["schemas"] if _same_schema(s, schema)), None)
        if existing is not None:
            schema_id = existing["schema-id"]
        else:
            new_id = max(s["schema-id"] for s in metadata["schemas"]) + 1
            updates.append({"action": "add-schema", "schema": {**schema, "schema-id": new_id}})
            schema_id = -1
        version_id = max(v["version-id"] for v in metadata["versions"]) + 1
        updates.append(
            {
                "action": "add-view-version",
                "view-version": self.version(
                    version_id, schema_id, queries, default_namespace, default_catalog, "replace"
                ),
            }
        )
        updates.append({"action": "set-current-view-version", "view-version-id": -1})
        return [{"type": "assert-view-uuid", "uuid": metadata["view-uuid"]}], updates

    def commit(self, ident, requirements, updates) -> dict:
        return self._call(
            "POST", self.view_url(ident), json={"requirements": requirements, "updates": updates}
        ).json()

    def replace(self, ident, **kwargs) -> dict:
        """Java ``ViewBuilder.replace()``: a table of that name is a client-side error first."""
        if self.table_exists(ident):
            name = ".".join([*ident[0], ident[1]])
            raise RestError(409, {"error": {"type": "AlreadyExistsException",
                                            "message": f"Table with same name already exists: {name}"}})
        base = self.load(ident)
        kwargs.setdefault("default_namespace", ident[0])
        requirements, updates = self.replace_changes(base, **kwargs)
        return self.commit(ident, requirements, updates)

    def create_or_replace(self, ident, **kwargs) -> dict:
        if self.exists(ident):
            return self.replace(ident, **kwargs)
        return self.create(ident, **kwargs)

    def update_properties(self, ident, *, set=None, remove=None) -> dict:
        base = self.load(ident)
        updates = []
        if set:
            updates.append({"action": "set-properties", "updates": set})
        if remove:
            updates.append({"action": "remove-properties", "removals": list(remove)})
        return self.commit(ident, [{"type": "assert-view-uuid", "uuid": base["metadata"]["view-uuid"]}], updates)

    def rename(self, source, destination) -> None:
        self._call(
            "POST",
            f"{self.base}/views/rename",
            json={
                "source": {"namespace": list(source[0]), "name": source[1]},
                "destination": {"namespace": list(destination[0]), "name": destination[1]},
            },
        )

    def register(self, ident, metadata_location: str) -> dict:
        namespace, name = ident
        return self._call(
            "POST",
            f"{self.base}/namespaces/{_ns(namespace)}/register-view",
            json={"name": name, "metadata-location": metadata_location},
        ).json()


@pytest.fixture
def views(http, prefix_url) -> ViewClient:
    return ViewClient(http, prefix_url)
