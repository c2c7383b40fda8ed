"""The console's only way into the catalog: the host's own HTTP API, called in-process.

Every page and action sends an ordinary API request through the app's ASGI entry point (so the
read lane, authentication, authorization, validation and events run exactly as for any client),
with the signed-in user's bearer token and the selected project. A failed call raises
:class:`ApiError` carrying the ErrorModel the API answered, which the page shows to the user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import httpx


class ApiError(Exception):
    """An API answer with status >= 400, as its ErrorModel ``{"error": {message, type, code}}``."""

    def __init__(self, status: int, type_: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.type = type_
        self.message = message

    @classmethod
    def from_response(cls, response: httpx.Response) -> ApiError:
        try:
            error = response.json().get("error") or {}
        except (ValueError, AttributeError):
            error = {}
        message = error.get("message") or response.text or response.reason_phrase
        return cls(response.status_code, error.get("type") or "Error", message)

    def __str__(self) -> str:
        return f"{self.message} ({self.type}, HTTP {self.status})"


def encode_namespace(parts: list[str] | tuple[str, ...]) -> str:
    """A namespace as one path segment of the Iceberg REST API (parts joined by the unit separator)."""
    return "%1F".join(quote(part, safe="") for part in parts)


class ConsoleApi:
    """API calls on behalf of one console request."""

    def __init__(self, asgi_app: Any, base_url: str, *, token: str | None, project_id: str | None) -> None:
        headers = {"user-agent": "lakekeeper-console"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        if project_id:
            headers["x-project-id"] = project_id
        import httpx  # on the first console page, not when the server starts

        self._client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=asgi_app), base_url=base_url, headers=headers, timeout=None
        )
        self._prefixes: dict[str, str] = {}

    async def close(self) -> None:
        await self._client.aclose()

    async def call(self, method: str, path: str, *, json: Any = None, params: dict[str, Any] | None = None) -> Any:
        """The decoded JSON answer (None for an empty one); raises :class:`ApiError` on failure."""
        if params:
            params = {k: v for k, v in params.items() if v is not None and v != ""}
        response = await self._client.request(method, path, json=json, params=params or None)
        if response.status_code >= 400:
            raise ApiError.from_response(response)
        if not response.content:
            return None
        return response.json()

    async def get(self, path: str, **params: Any) -> Any:
        return await self.call("GET", path, params=params)

    async def management(self, method: str, path: str, json: Any = None, **params: Any) -> Any:
        return await self.call(method, "/management/v1" + path, json=json, params=params)

    async def catalog_prefix(self, warehouse_name: str) -> str:
        """The catalog prefix of a warehouse, as a client learns it: ``GET /catalog/v1/config``."""
        if warehouse_name not in self._prefixes:
            config = await self.get("/catalog/v1/config", warehouse=warehouse_name)
            prefix = (config.get("overrides") or {}).get("prefix") or (config.get("defaults") or {}).get("prefix")
            self._prefixes[warehouse_name] = prefix
        return self._prefixes[warehouse_name]

    async def catalog(self, method: str, warehouse_name: str, path: str, json: Any = None, **params: Any) -> Any:
        prefix = await self.catalog_prefix(warehouse_name)
        return await self.call(method, f"/catalog/v1/{prefix}{path}", json=json, params=params)

    async def generic(self, method: str, warehouse_name: str, path: str, json: Any = None, **params: Any) -> Any:
        """The Generic Table API (``/lakekeeper/v1/{prefix}``), on the same prefix as the catalog."""
        prefix = await self.catalog_prefix(warehouse_name)
        return await self.call(method, f"/lakekeeper/v1/{prefix}{path}", json=json, params=params)
