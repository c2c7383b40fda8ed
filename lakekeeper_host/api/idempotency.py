"""``@idempotent("createTable")``: the one-line Idempotency-Key support for a mutating route.

Put it below the route decorator::

    @blueprint.post("/<prefix>/namespaces/<namespace>/tables")
    @idempotent("createTable")
    async def create_table(prefix, namespace): ...

Without the header (or with the feature disabled) the route runs unchanged. With it, the key is
claimed for the caller in the warehouse of the ``prefix`` path argument, bound to this route and
request; a finalized earlier outcome is replayed once the caller passed the operation's
authorization again, and this outcome is recorded (see ``server/idempotency.py`` for the rules).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from quart import Response, make_response, request

from lakekeeper_host.api.common import error_response, metadata, parse_json, state
from lakekeeper_host.errors import CatalogError
from lakekeeper_host.server import idempotency

REPLAY_HEADER = "Idempotency-Replayed"


def idempotent(operation: str) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Response]]]:
    if operation not in idempotency.OPERATIONS:
        raise ValueError(f"operation {operation!r} does not take an Idempotency-Key")

    def decorate(view: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Response]]:
        @functools.wraps(view)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            app_state = state()
            if not idempotency.enabled(app_state):
                return await view(*args, **kwargs)
            key = idempotency.parse_key(request.headers.get(idempotency.HEADER))
            if key is None:
                return await view(*args, **kwargs)
            warehouse_id = str(kwargs.get("prefix") or "")
            raw_body = await request.get_data()
            meta = metadata()
            claim = idempotency.new_claim(meta, warehouse_id, key, operation, f"{request.method} {request.path}",
                                          request.query_string, raw_body)

            record = await idempotency.claim(app_state, claim)
            if record is not None:
                try:
                    await idempotency.authorize_replay(app_state, meta, warehouse_id, operation, kwargs,
                                                       _parsed(raw_body))
                except CatalogError as refused:
                    return error_response(refused)
                status, headers, body = idempotency.replay(record)
                response = Response(body, status=status, headers=headers)
                response.headers[REPLAY_HEADER] = "true"
                return response

            try:
                response = await make_response(await view(*args, **kwargs))
            except CatalogError as error:
                response = error_response(error)
            except BaseException:
                await idempotency.release(app_state, claim)
                raise
            body = (await response.get_data(as_text=True)) if response.status_code != 304 else ""
            try:
                await idempotency.finalize(app_state, claim, response.status_code, dict(response.headers), body)
            except Exception:
                await idempotency.release(app_state, claim)
                raise
            return response

        return wrapper

    return decorate


def _parsed(raw: bytes) -> Any:
    """The body as JSON for the replay's authorization (None when it is not: nothing to name)."""
    try:
        return parse_json(raw) if raw else None
    except CatalogError:
        return None
