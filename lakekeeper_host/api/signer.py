"""S3 remote-signing routes (Iceberg ``S3SignRequest`` -> ``S3SignResponse``), reference §1.4.

- ``/catalog/v1/aws/s3/sign``: the global form; without a warehouse it is a 400.
- ``/catalog/v1/{prefix}/v1/aws/s3/sign``: warehouse-scoped; the table is found by location.
- ``/catalog/v1/signer/{prefix}/tabular-id/{tabular_id}/v1/aws/s3/sign``: table-scoped, as
  advertised in ``s3.signer.endpoint``.
"""

from __future__ import annotations

from quart import Blueprint

from lakekeeper_host.api.common import json_body, json_response, metadata, state
from lakekeeper_host.serde import structure_body
from lakekeeper_host.server.security.signer import SignRequest, sign

blueprint = Blueprint("s3_signer", __name__, url_prefix="/catalog/v1")


async def _sign(prefix: str | None, tabular_id: str | None):
    request = structure_body(await json_body(), SignRequest)
    body, cache_control = await sign(state(), metadata(), warehouse_id=prefix, tabular_id=tabular_id, request=request)
    return json_response(body, headers={"Cache-Control": cache_control})


@blueprint.post("/aws/s3/sign")
async def sign_global():
    return await _sign(None, None)


@blueprint.post("/<prefix>/v1/aws/s3/sign")
async def sign_in_warehouse(prefix: str):
    return await _sign(prefix, None)


@blueprint.post("/signer/<prefix>/tabular-id/<tabular_id>/v1/aws/s3/sign")
async def sign_for_table(prefix: str, tabular_id: str):
    return await _sign(prefix, tabular_id)
