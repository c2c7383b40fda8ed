"""HTTP helpers shared by the blueprints: state access, request metadata, JSON bodies."""

from __future__ import annotations

import json
from typing import Any

from attrs import frozen
from quart import Response, current_app, g, request

from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.service.authz import ANONYMOUS, Actor
from lakekeeper_host.service.state import AppState


@frozen
class RequestMetadata:
    """Who asks and how to build self-links; passed from the API layer to the server layer."""

    request_id: str
    actor: Actor
    base_uri: str  # e.g. http://host:8181 (no trailing slash)
    project_id: str | None  # from x-project-id
    user_agent: str = ""
    idempotency_key: str | None = None


def state() -> AppState:
    return current_app.extensions["lakekeeper"]


def metadata() -> RequestMetadata:
    return RequestMetadata(
        request_id=g.request_id,
        actor=getattr(g, "actor", ANONYMOUS),
        base_uri=base_uri(),
        project_id=request.headers.get("x-project-id") or None,
        user_agent=request.headers.get("user-agent", ""),
        idempotency_key=request.headers.get("idempotency-key") or None,
    )


def base_uri() -> str:
    settings = state().settings
    if settings.host.base_uri:
        return settings.host.base_uri.rstrip("/")
    headers = request.headers
    if settings.host.use_x_forwarded_headers and headers.get("x-forwarded-host"):
        proto = headers.get("x-forwarded-proto", request.scheme)
        host = headers["x-forwarded-host"].split(",")[0].strip()
        port = headers.get("x-forwarded-port")
        if port and ":" not in host and not (
            (proto == "https" and port == "443") or (proto == "http" and port == "80")
        ):
            host = f"{host}:{port}"
        prefix = headers.get("x-forwarded-prefix", "").rstrip("/")
        return f"{proto}://{host}{prefix}"
    return f"{request.scheme}://{request.host}"


async def json_body() -> Any:
    raw = await request.get_data()
    if not raw:
        raise bad_request("Request body is required")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_request(f"Request body is not valid JSON: {exc}") from None


async def optional_json_body() -> Any:
    raw = await request.get_data()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_request(f"Request body is not valid JSON: {exc}") from None


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = payload if isinstance(payload, (bytes, str)) else json.dumps(payload, separators=(",", ":"))
    return Response(body, status=status, headers=headers, content_type="application/json")


def empty(status: int = 204, headers: dict[str, str] | None = None) -> Response:
    return Response(b"", status=status, headers=headers)


def query_bool(name: str, default: bool = False) -> bool:
    value = request.args.get(name)
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise bad_request(f"Query parameter {name} must be true or false, got {value!r}")


def query_int(name: str) -> int | None:
    value = request.args.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"Query parameter {name} must be an integer, got {value!r}") from None


def error_response(error: CatalogError) -> Response:
    return json_response(error.to_model(), error.code, headers=error.headers)
