"""The three signer routes in-process (Quart test client) on SeaweedFS, SQLite and PostgreSQL.

Tables are inserted as catalog rows here so every signer rule can be hit directly; the
PyIceberg end-to-end tests (test_pyiceberg.py) drive the same routes through a real client.
"""

from __future__ import annotations

import urllib.parse

import httpx
import pytest

from lakekeeper_host import hookimpl
from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.ids import new_id
from lakekeeper_host.plugins import make_plugin_manager
from lakekeeper_host.registry import BackendSpec
from lakekeeper_host.service.authz import AuthorizerBase
from lakekeeper_host.store.db import now_ms
from lakekeeper_testing.services import backend_database

pytestmark = pytest.mark.s3

BUCKET = "lakekeeper"


class NoWriteAuthorizer(AuthorizerBase):
    """Everything but writing table data (a reader's grants)."""

    name = "no-write"

    async def is_allowed(self, actor, action, resource):
        return action != "write_data"


class NoWritePlugin:
    @hookimpl
    def lakekeeper_authorizers(self):
        async def build(config, ctx):
            return NoWriteAuthorizer()

        return [BackendSpec(name="no-write", factory=build)]


@pytest.fixture(params=["sqlite", "postgres"])
async def app_client(request, tmp_path):
    clients = []

    async def start(**env):
        environ = {
            "LAKEKEEPER__DATA_DIR": str(tmp_path),
            "LAKEKEEPER__DEBUG__MIGRATE_BEFORE_SERVE": "true",
            "LAKEKEEPER__EMBEDDED_QUICKSTART": "false",
            **db_env,
            **env,
        }
        app = create_app(
            load_settings(environ), make_plugin_manager(extra_plugins=[(NoWritePlugin(), "no-write-authz")])
        )
        context = app.test_app()
        test_app = await context.__aenter__()
        clients.append(context)
        client = test_app.test_client()
        client.state = app.extensions["lakekeeper"]
        await client.post("/management/v1/bootstrap", json={"accept-terms-of-use": True})
        return client

    with backend_database(request.param) as db_env:
        yield start
        for context in clients:
            await context.__aexit__(None, None, None)


async def add_table(client, warehouse_id: str, location: str, *, typ: str = "table", deleted: bool = False) -> str:
    """A catalog row for a table at ``location`` (what createTable would leave behind)."""
    store = client.state.store
    namespace_id = new_id()
    tabular_id = new_id()
    async with store.transaction() as tx:
        await tx.execute(
            "INSERT INTO namespace (id, warehouse_id, name, name_key, properties, created_at) "
            "VALUES (:id, :w, :n, :k, '{}', :t)",
            {"id": namespace_id, "w": warehouse_id, "n": namespace_id, "k": namespace_id, "t": now_ms()},
        )
        await tx.execute(
            "INSERT INTO tabular (id, warehouse_id, namespace_id, name, name_key, typ, location, deleted_at, "
            "created_at) VALUES (:id, :w, :ns, 'tbl', 'tbl', :typ, :loc, :del, :t)",
            {"id": tabular_id, "w": warehouse_id, "ns": namespace_id, "typ": typ, "loc": location,
             "del": now_ms() if deleted else None, "t": now_ms()},
        )  # fmt: skip
    return tabular_id


async def make_s3_warehouse(client, s3_profile, s3_credential, **profile) -> tuple[str, str]:
    response = await client.post(
        "/management/v1/warehouse",
        json={
            "warehouse-name": f"wh-{new_id()[:8]}",
            "storage-profile": s3_profile(**{"sts-enabled": False, **profile}),
            "storage-credential": s3_credential,
        },
    )
    assert response.status_code == 201, await response.get_data()
    body = await response.get_json()
    profile_json = body["storage-profile"]
    return body["warehouse-id"], f"s3://{BUCKET}/{profile_json['key-prefix']}"


def sign_body(seaweed, key: str, method: str = "GET", **extra) -> dict:
    return {
        "region": seaweed.region,
        "uri": f"{seaweed.endpoint}/{BUCKET}/{urllib.parse.quote(key)}",
        "method": method,
        "headers": {"User-Agent": ["pyiceberg-test"]},
        **extra,
    }


async def test_table_scoped_signature_works_against_s3(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    table_id = await add_table(client, warehouse_id, f"{base}/table-a")
    key = f"{key_prefix}/table-a/data/00000-0.parquet"
    route = f"/catalog/v1/signer/{warehouse_id}/tabular-id/{table_id}/v1/aws/s3/sign"

    put = await client.post(route, json=sign_body(seaweed, key, "PUT"))
    assert put.status_code == 200, await put.get_data()
    signed = await put.get_json()
    assert put.headers["Cache-Control"] == "no-cache"
    headers = {k: ", ".join(v) for k, v in signed["headers"].items()}
    assert "Authorization" in headers and headers["X-Amz-Content-SHA256"] == "UNSIGNED-PAYLOAD"
    assert httpx.put(signed["uri"], headers=headers, content=b"parquet-bytes").status_code == 200

    get = await (await client.post(route, json=sign_body(seaweed, key))).get_json()
    response = httpx.get(get["uri"], headers={k: ", ".join(v) for k, v in get["headers"].items()})
    assert response.status_code == 200 and response.content == b"parquet-bytes"


async def test_warehouse_scoped_route_finds_the_table_by_location(
    app_client, seaweed, s3_profile, s3_credential, key_prefix
):
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    await add_table(client, warehouse_id, f"{base}/table-a")
    route = f"/catalog/v1/{warehouse_id}/v1/aws/s3/sign"
    signed = await client.post(route, json=sign_body(seaweed, f"{key_prefix}/table-a/metadata/v1.json"))
    assert signed.status_code == 200
    # an object under no table: nothing to authorise against
    nowhere = await client.post(route, json=sign_body(seaweed, f"{key_prefix}/no-table/f"))
    assert nowhere.status_code == 404


async def test_uri_outside_the_table_is_refused(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    table_id = await add_table(client, warehouse_id, f"{base}/table-a")
    route = f"/catalog/v1/signer/{warehouse_id}/tabular-id/{table_id}/v1/aws/s3/sign"
    for key in (f"{key_prefix}/table-ab/f", f"{key_prefix}/f", "elsewhere/f"):
        response = await client.post(route, json=sign_body(seaweed, key, "PUT"))
        assert response.status_code == 403, key
        assert (await response.get_json())["error"]["type"] == "RequestUriMismatch"
    listing = await client.post(
        route, json={**sign_body(seaweed, ""), "uri": f"{seaweed.endpoint}/{BUCKET}?list-type=2&prefix={key_prefix}/"}
    )
    assert listing.status_code == 403
    inside = f"{seaweed.endpoint}/{BUCKET}?list-type=2&prefix={key_prefix}/table-a/metadata/"
    assert (await client.post(route, json={**sign_body(seaweed, ""), "uri": inside})).status_code == 200


async def test_bulk_delete_keys_must_all_be_inside(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    table_id = await add_table(client, warehouse_id, f"{base}/table-a")
    route = f"/catalog/v1/signer/{warehouse_id}/tabular-id/{table_id}/v1/aws/s3/sign"

    def delete(*keys):
        body = "<Delete>" + "".join(f"<Object><Key>{k}</Key></Object>" for k in keys) + "</Delete>"
        return {**sign_body(seaweed, ""), "uri": f"{seaweed.endpoint}/{BUCKET}?delete", "method": "POST", "body": body}

    inside = await client.post(route, json=delete(f"{key_prefix}/table-a/a", f"{key_prefix}/table-a/b"))
    assert inside.status_code == 200
    mixed = await client.post(route, json=delete(f"{key_prefix}/table-a/a", f"{key_prefix}/table-b/b"))
    assert mixed.status_code == 403
    no_body = {**delete("x"), "body": None}
    assert (await client.post(route, json=no_body)).status_code == 400


async def test_stale_table_id_falls_back_to_the_location(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    """PyIceberg <= 0.9.1 reused one table's signer endpoint for all tables."""
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    table_a = await add_table(client, warehouse_id, f"{base}/table-a")
    await add_table(client, warehouse_id, f"{base}/table-b")
    route = f"/catalog/v1/signer/{warehouse_id}/tabular-id/{table_a}/v1/aws/s3/sign"
    assert (await client.post(route, json=sign_body(seaweed, f"{key_prefix}/table-b/f"))).status_code == 200
    unknown_id = f"/catalog/v1/signer/{warehouse_id}/tabular-id/{new_id()}/v1/aws/s3/sign"
    assert (await client.post(unknown_id, json=sign_body(seaweed, f"{key_prefix}/table-b/f"))).status_code == 200


async def test_dropped_tables_stay_readable_for_signing(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    await add_table(client, warehouse_id, f"{base}/gone", deleted=True)
    route = f"/catalog/v1/{warehouse_id}/v1/aws/s3/sign"
    response = await client.post(route, json=sign_body(seaweed, f"{key_prefix}/gone/metadata/v1.json", "HEAD"))
    assert response.status_code == 200


async def test_views_are_not_signable(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    await add_table(client, warehouse_id, f"{base}/view-a", typ="view")
    route = f"/catalog/v1/{warehouse_id}/v1/aws/s3/sign"
    response = await client.post(route, json=sign_body(seaweed, f"{key_prefix}/view-a/metadata/v1.json"))
    assert response.status_code == 404


async def test_region_must_match_the_profile(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    await add_table(client, warehouse_id, f"{base}/table-a")
    body = {**sign_body(seaweed, f"{key_prefix}/table-a/f"), "region": "eu-west-1"}
    response = await client.post(f"/catalog/v1/{warehouse_id}/v1/aws/s3/sign", json=body)
    assert response.status_code == 400
    assert (await response.get_json())["error"]["type"] == "RegionMismatch"


async def test_signing_disabled_and_unsupported_storage(
    app_client, seaweed, s3_profile, s3_credential, key_prefix, tmp_path
):
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential, **{"remote-signing-enabled": False})
    await add_table(client, warehouse_id, f"{base}/table-a")
    disabled = await client.post(
        f"/catalog/v1/{warehouse_id}/v1/aws/s3/sign", json=sign_body(seaweed, f"{key_prefix}/table-a/f")
    )
    assert disabled.status_code == 403
    assert (await disabled.get_json())["error"]["type"] == "RemoteSigningDisabled"

    (tmp_path / "files").mkdir()
    file_wh = await client.post(
        "/management/v1/warehouse",
        json={"warehouse-name": "files", "storage-profile": {"type": "file", "root": str(tmp_path / "files")}},
    )
    file_id = (await file_wh.get_json())["warehouse-id"]
    unsupported = await client.post(f"/catalog/v1/{file_id}/v1/aws/s3/sign", json=sign_body(seaweed, "a/b"))
    assert unsupported.status_code == 400
    assert (await unsupported.get_json())["error"]["type"] == "UnsupportedStorageType"


async def test_global_route_needs_a_warehouse_and_unknown_warehouses_are_404(app_client, seaweed):
    client = await app_client()
    response = await client.post("/catalog/v1/aws/s3/sign", json=sign_body(seaweed, "a/b"))
    assert response.status_code == 400
    unknown_warehouse = await client.post(f"/catalog/v1/{new_id()}/v1/aws/s3/sign", json=sign_body(seaweed, "a/b"))
    assert unknown_warehouse.status_code == 404
    malformed = await client.post(f"/catalog/v1/{new_id()}/v1/aws/s3/sign", json={"uri": "x"})
    assert malformed.status_code == 400


async def test_writes_need_write_permission(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    client = await app_client(LAKEKEEPER__AUTHZ_BACKEND="no-write")
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    table_id = await add_table(client, warehouse_id, f"{base}/table-a")
    route = f"/catalog/v1/signer/{warehouse_id}/tabular-id/{table_id}/v1/aws/s3/sign"
    key = f"{key_prefix}/table-a/f"
    assert (await client.post(route, json=sign_body(seaweed, key, "GET"))).status_code == 200
    for method in ("PUT", "DELETE", "POST"):  # POST: multipart uploads
        response = await client.post(route, json=sign_body(seaweed, key, method))
        assert response.status_code == 403, method
        assert (await response.get_json())["error"]["message"].startswith("Not allowed to write data"), method
    upload = sign_body(seaweed, key, "POST")
    upload["uri"] += "?uploads"
    refused = await client.post(route, json=upload)
    assert refused.status_code == 403
    assert (await refused.get_json())["error"]["message"].startswith("Not allowed to write data on table")


# ---------------------------------------------------------------- confinement (issue 30), from the attacker's side


def _signed_headers(signed: dict) -> dict[str, str]:
    return {k: ", ".join(v) for k, v in signed["headers"].items()}


async def test_a_list_prefix_needs_a_folder_boundary(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    """``prefix=<table>`` without the trailing ``/`` lists the keys of ``<table>-private/`` too."""
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    table_id = await add_table(client, warehouse_id, f"{base}/table-a")
    seaweed.client().put_object(Bucket=BUCKET, Key=f"{key_prefix}/table-a-private/secret.parquet", Body=b"x")
    route = f"/catalog/v1/signer/{warehouse_id}/tabular-id/{table_id}/v1/aws/s3/sign"

    def listing(prefix: str) -> dict:
        uri = f"{seaweed.endpoint}/{BUCKET}?list-type=2&prefix={urllib.parse.quote(prefix, safe='')}"
        return {**sign_body(seaweed, ""), "uri": uri}

    response = await client.post(route, json=listing(f"{key_prefix}/table-a"))
    if response.status_code == 200:  # what the old signer allowed: the sibling's keys
        signed = await response.get_json()
        leaked = httpx.get(signed["uri"], headers=_signed_headers(signed)).text
        assert "table-a-private" not in leaked, leaked
    assert response.status_code == 403, await response.get_data()
    assert (await response.get_json())["error"]["type"] == "RequestUriMismatch"
    for inside in (f"{key_prefix}/table-a/", f"{key_prefix}/table-a/metadata/000"):
        assert (await client.post(route, json=listing(inside))).status_code == 200, inside


@pytest.mark.parametrize("dots", ["..", "%2e%2e", "%2E%2e", ".%2E", "."])
async def test_dot_segments_are_refused(app_client, seaweed, s3_profile, s3_credential, key_prefix, dots):
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    table_id = await add_table(client, warehouse_id, f"{base}/table-a")
    await add_table(client, warehouse_id, f"{base}/table-b")
    route = f"/catalog/v1/signer/{warehouse_id}/tabular-id/{table_id}/v1/aws/s3/sign"
    escape = f"{dots}/table-b/f" if dots != "." else f"{dots}/f"
    put = {**sign_body(seaweed, "", "PUT"), "uri": f"{seaweed.endpoint}/{BUCKET}/{key_prefix}/table-a/{escape}"}
    response = await client.post(route, json=put)
    if response.status_code == 200:  # the old signer signed it: where does the write land?
        signed = await response.get_json()
        httpx.put(signed["uri"], headers=_signed_headers(signed), content=b"planted")
    assert response.status_code == 400, await response.get_data()
    assert (await response.get_json())["error"]["type"] == "InvalidPathSegment"
    listed = seaweed.client().list_objects_v2(Bucket=BUCKET, Prefix=f"{key_prefix}/table-b/")
    assert not listed.get("Contents"), listed.get("Contents")

    listing = f"{seaweed.endpoint}/{BUCKET}?list-type=2&prefix={key_prefix}/table-a/{dots}/table-b/"
    assert (await client.post(route, json={**sign_body(seaweed, ""), "uri": listing})).status_code == 400
    body = f"<Delete><Object><Key>{key_prefix}/table-a/../table-b/f</Key></Object></Delete>"
    bulk = {**sign_body(seaweed, ""), "uri": f"{seaweed.endpoint}/{BUCKET}?delete", "method": "POST", "body": body}
    assert (await client.post(route, json=bulk)).status_code == 400


async def test_a_copy_source_must_lie_inside_the_table(app_client, seaweed, s3_profile, s3_credential, key_prefix):
    """A PUT with ``x-amz-copy-source`` reads its source: another table's object must not be copyable."""
    client = await app_client()
    warehouse_id, base = await make_s3_warehouse(client, s3_profile, s3_credential)
    table_id = await add_table(client, warehouse_id, f"{base}/table-a")
    await add_table(client, warehouse_id, f"{base}/table-b")
    s3 = seaweed.client()
    s3.put_object(Bucket=BUCKET, Key=f"{key_prefix}/table-b/secret", Body=b"table-b's data")
    s3.put_object(Bucket=BUCKET, Key=f"{key_prefix}/table-a/own", Body=b"table-a's data")
    route = f"/catalog/v1/signer/{warehouse_id}/tabular-id/{table_id}/v1/aws/s3/sign"

    def copy(source: str, target: str) -> dict:
        body = sign_body(seaweed, f"{key_prefix}/table-a/{target}", "PUT")
        body["headers"]["x-amz-copy-source"] = [urllib.parse.quote(f"/{BUCKET}/{source}")]
        return body

    response = await client.post(route, json=copy(f"{key_prefix}/table-b/secret", "stolen"))
    if response.status_code == 200:  # the old signer signed it: the copy reads table-b
        signed = await response.get_json()
        httpx.put(signed["uri"], headers=_signed_headers(signed))
    assert response.status_code == 403, await response.get_data()
    assert (await response.get_json())["error"]["type"] == "RequestUriMismatch"
    assert not s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{key_prefix}/table-a/stolen").get("Contents")

    inside = await client.post(route, json=copy(f"{key_prefix}/table-a/own", "copied"))
    assert inside.status_code == 200, await inside.get_data()
    signed = await inside.get_json()
    assert httpx.put(signed["uri"], headers=_signed_headers(signed)).status_code == 200
    assert s3.get_object(Bucket=BUCKET, Key=f"{key_prefix}/table-a/copied")["Body"].read() == b"table-a's data"
    get_with_copy = copy(f"{key_prefix}/table-a/own", "x") | {"method": "GET"}
    assert (await client.post(route, json=get_with_copy)).status_code == 403
