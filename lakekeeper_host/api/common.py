"""HTTP helpers shared by the blueprints: state access, request metadata, JSON bodies."""

from __future__ import annotations

import json
import re
from typing import Any

from quart import Response, current_app, g, request

from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.service.request import RequestMetadata
from lakekeeper_host.service.state import AppState


def state() -> AppState:
    return current_app.extensions["lakekeeper"]


def metadata() -> RequestMetadata:
    """The current Quart request's metadata, built by the request pipeline (``api/pipeline.py``)."""
    return g.request_metadata


def base_uri() -> str:
    return base_uri_for(state().settings, request.scheme, request.host, request.headers)


def base_uri_for(settings: Any, scheme: str, host: str, headers: Any) -> str:
    """The external base URL: ``BASE_URI``, else ``X-Forwarded-*`` (when trusted), else scheme + Host."""
    if settings.host.base_uri:
        return settings.host.base_uri.rstrip("/")
    if settings.host.use_x_forwarded_headers and headers.get("x-forwarded-host"):
        proto = headers.get("x-forwarded-proto", scheme)
        host = headers["x-forwarded-host"].split(",")[0].strip()
        port = headers.get("x-forwarded-port")
        if port and ":" not in host and not (
            (proto == "https" and port == "443") or (proto == "http" and port == "80")
        ):
            host = f"{host}:{port}"
        prefix = headers.get("x-forwarded-prefix", "").rstrip("/")
        return f"{proto}://{host}{prefix}"
    return f"{scheme}://{host}"


# deeper JSON is refused with a 400: no Iceberg or management body comes near it, and the parsers and
# validators behind the routes recurse per level
MAX_JSON_DEPTH = 256


# a JSON escape that can produce text no store or encoder keeps: a UTF-16 surrogate (a pair becomes one
# character; a lone one cannot be encoded as UTF-8) or U+0000 (PostgreSQL's text and jsonb refuse it)
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:[dD][89a-fA-F]|0000)")


def parse_json(raw: bytes) -> Any:
    """A request body as JSON; 400 for invalid or too deeply nested JSON (never a RecursionError),
    and for strings holding a lone surrogate or U+0000 (JSON allows both; no catalog can store,
    log or answer them, so every route refuses them here)."""
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise bad_request(f"Request body is not valid JSON: {exc}") from None
    except RecursionError:
        value = None
        depth = MAX_JSON_DEPTH + 1
    else:
        # counting brackets is C-fast; only a body with many of them is walked
        depth = _depth(value) if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH else 0
    if depth > MAX_JSON_DEPTH:
        raise bad_request(f"Request body is nested too deeply: more than {MAX_JSON_DEPTH} levels of arrays/objects")
    if _SUSPECT_ESCAPE.search(raw):  # C-fast as well; only such a body is walked
        _refuse_unstorable_text(value)
    return value


def _refuse_unstorable_text(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            if "\x00" in item:
                raise bad_request("Request body contains the character U+0000, which cannot be stored")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise bad_request("Request body contains a lone UTF-16 surrogate (\\ud800-\\udfff) that is not "
                                  "half of a pair: not a character, cannot be stored") from None


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > MAX_JSON_DEPTH:
            return deepest
        stack.extend((child, level + 1) for child in children if isinstance(child, dict | list))
    return deepest


async def json_body() -> Any:
    raw = await request.get_data()
    if not raw:
        raise bad_request("Request body is required")
    return parse_json(raw)


async def optional_json_body() -> Any:
    raw = await request.get_data()
    if not raw:
        return None
    return parse_json(raw)


def json_response(payload: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    body = payload if isinstance(payload, (bytes, str)) else json.dumps(payload, separators=(",", ":"))
    return Response(body, status=status, headers=headers, content_type="application/json")


def empty(status: int = 204, headers: dict[str, str] | None = None) -> Response:
    return Response(b"", status=status, headers=headers)


def query_bool(name: str, default: bool = False) -> bool:
    return parse_bool(name, request.args.get(name), default)


def query_int(name: str) -> int | None:
    return parse_int(name, request.args.get(name))


def parse_bool(name: str, value: str | None, default: bool = False) -> bool:
    """A boolean query parameter: true/false/1/0 (any case), empty or absent = ``default``."""
    if value is None or value == "":
        return default
    lowered = value.lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise bad_request(f"Query parameter {name} must be true or false, got {_shown(value)}")


def parse_int(name: str, value: str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise bad_request(f"Query parameter {name} must be an integer, got {_shown(value)}") from None


def _shown(value: str, limit: int = 64) -> str:
    """A client's value echoed in a message, cut short (a 5,000-digit number is not repeated back)."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"... ({len(value)} characters)"


# ---------------------------------------------------------------- what every response carries
# Pipeline.run (api/pipeline.py) applies these to every response, the read lane's and Quart's.

CORS_ALLOWED_HEADERS = (
    "authorization, content-type, accept, user-agent, x-project-id, x-request-id, "
    "if-none-match, x-user-agent, x-iceberg-access-delegation, idempotency-key"
)
_UNCACHED_PREFIXES = ("/health",)
VARY = "authorization, x-project-id, x-iceberg-access-delegation"


def policy_headers(allow_origin: tuple[str, ...], path: str, origin: str | None) -> dict[str, str]:
    """Lakekeeper's cache directives (``Cache-Control: private`` unless the route set its own,
    ``Vary``) and the CORS headers ``ALLOW_ORIGIN`` asks for."""
    headers: dict[str, str] = {}
    if not path.startswith(_UNCACHED_PREFIXES):
        headers["Cache-Control"] = "private"
        headers["Vary"] = VARY
    if allow_origin:
        if "*" in allow_origin:
            headers["Access-Control-Allow-Origin"] = "*"
        elif origin and origin in allow_origin:
            headers["Access-Control-Allow-Origin"] = origin
        headers["Access-Control-Allow-Headers"] = CORS_ALLOWED_HEADERS
        headers["Access-Control-Allow-Methods"] = "GET, POST, PUT, DELETE, HEAD, OPTIONS"
        headers["Access-Control-Expose-Headers"] = "etag, x-request-id"
    return headers


def request_timeout(seconds: float) -> CatalogError:
    return CatalogError(408, "RequestTimeout", f"Request took longer than the limit of {seconds:g}s (MAX_REQUEST_TIME)")


def internal_error_model(error_id: str) -> dict[str, Any]:
    """The 500 body: an id to find the logged traceback by, nothing of the error itself."""
    return {"error": {"message": f"Internal server error (error id {error_id})", "type": "InternalServerError",
                      "code": 500}}


def error_response(error: CatalogError) -> Response:
    return json_response(error.to_model(), error.code, headers=error.headers)
