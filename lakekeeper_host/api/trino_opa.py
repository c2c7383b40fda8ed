"""Trino's OPA HTTP protocol: ``POST /trino/{key}/allow`` (``opa.policy.uri``) and
``POST /trino/{key}/batch`` (``opa.policy.batched-uri``); ``{"input": ...}`` in, ``{"result": ...}`` out.

Trino sends no Authorization header to its policy endpoint, so these routes take no token: the key in
the path (``LAKEKEEPER__TRINO_OPA__KEY``) is the credential. The decisions are ``server/trino_opa.py``'s.
"""

from __future__ import annotations

from quart import Blueprint

from lakekeeper_host.api.common import json_body, json_response, metadata, state
from lakekeeper_host.errors import bad_request
from lakekeeper_host.server import trino_opa

blueprint = Blueprint("trino_opa", __name__, url_prefix="/trino/<key>")


async def _input() -> object:
    body = await json_body()
    if not isinstance(body, dict) or not isinstance(body.get("input"), dict):
        raise bad_request('The body must be {"input": {...}}, as Trino sends it')
    return body["input"]


@blueprint.post("/allow")
async def allow(key: str):
    """Trino's single decision: ``{"result": true|false}``"""
    trino_opa.check_key(state(), key)
    return json_response({"result": await trino_opa.allow(state(), metadata(), await _input())})


@blueprint.post("/batch")
async def batch(key: str):
    """Trino's batched filtering: ``{"result": [indices of filterResources kept]}``"""
    trino_opa.check_key(state(), key)
    return json_response({"result": await trino_opa.batch(state(), metadata(), await _input())})
