"""``/swagger-ui`` and the OpenAPI documents of the catalog and management APIs.

The documents are generated from the routes the server actually mounts (path, methods, and the
first docstring line of each view), so they never drift from what is served. Swagger UI's assets
come from the ``swagger-ui-bundle`` package: no network needed.
"""

from __future__ import annotations

import re

from quart import Blueprint, current_app, send_from_directory

from lakekeeper_host import __version__
from lakekeeper_host.api.common import json_response, state
from lakekeeper_host.errors import not_found

blueprint = Blueprint("docs", __name__)

DOCUMENTS = {
    "catalog": ("/catalog/", "Lakekeeper Iceberg REST Catalog API"),
    "management": ("/management/", "Lakekeeper Management API"),
}
_PARAM = re.compile(r"<(?:[a-z]+:)?([a-zA-Z_]+)>")

_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Lakekeeper API</title>
<link rel="stylesheet" href="/swagger-ui/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/swagger-ui/assets/swagger-ui-bundle.js"></script>
<script src="/swagger-ui/assets/swagger-ui-standalone-preset.js"></script>
<script>
window.ui = SwaggerUIBundle({
  urls: [{url: "/api-docs/catalog/v1/openapi.json", name: "Iceberg REST Catalog"},
         {url: "/api-docs/management/v1/openapi.json", name: "Management"}],
  dom_id: "#swagger-ui", presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: "StandaloneLayout"});
</script></body></html>"""


def _require_enabled() -> None:
    if not state().settings.host.serve_swagger_ui:
        raise not_found("Swagger UI is disabled (LAKEKEEPER__SERVE_SWAGGER_UI=false)")


def build_openapi(prefix: str, title: str) -> dict:
    paths: dict[str, dict] = {}
    for rule in current_app.url_map.iter_rules():
        if not rule.rule.startswith(prefix):
            continue
        view = current_app.view_functions.get(rule.endpoint)
        doc = (view.__doc__ or "").strip().splitlines() if view else []
        path = _PARAM.sub(r"{\1}", rule.rule)
        parameters = [
            {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
            for name in _PARAM.findall(rule.rule)
        ]
        for method in sorted((rule.methods or set()) - {"OPTIONS", "HEAD"} or {"HEAD"}):
            paths.setdefault(path, {})[method.lower()] = {
                "summary": doc[0] if doc else rule.endpoint,
                "operationId": f"{rule.endpoint}.{method.lower()}",
                "tags": [rule.endpoint.split(".")[0]],
                "parameters": parameters,
                "responses": {"default": {"description": "See the Iceberg REST / Lakekeeper specification"}},
            }
    return {
        "openapi": "3.1.0",
        "info": {"title": title, "version": __version__},
        "paths": dict(sorted(paths.items())),
    }


@blueprint.get("/api-docs/<name>/v1/openapi.json")
async def openapi(name: str):
    """The generated OpenAPI document of one API."""
    _require_enabled()
    if name not in DOCUMENTS:
        raise not_found(f"No API document named {name!r}")
    return json_response(build_openapi(*DOCUMENTS[name]))


@blueprint.get("/swagger-ui")
async def swagger_ui():
    """Swagger UI for both APIs."""
    _require_enabled()
    return _PAGE, 200, {"Content-Type": "text/html; charset=utf-8"}


@blueprint.get("/swagger-ui/assets/<path:filename>")
async def swagger_assets(filename: str):
    _require_enabled()
    from swagger_ui_bundle import swagger_ui_path

    return await send_from_directory(swagger_ui_path, filename)
