"""Vended credentials follow the caller's data permission (Lakekeeper ``StoragePermissions``).

A real ``lakekeeper serve`` (SQLite and PostgreSQL) with the S3 plugin, a real SeaweedFS with
STS whose role may do anything in the bucket (so only the session policy the server asks for
narrows the credentials), OIDC tokens from an in-process issuer for three users, and the
test-only ``data-grants`` authorizer (tests/plugins/data_grants_authz.py, installed as an
entry-point plugin): ``reader`` may not write table data, ``blind`` may neither read nor write
it, ``writer`` may do everything. boto3 with the vended keys shows what each may really do.
"""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import httpx
import pytest
from botocore.exceptions import ClientError

from lakekeeper_testing.pytest_plugin import STS_ROLE
from lakekeeper_testing.services import SeaweedS3, seaweed_role_arn
from tests.catalog.helpers import SCHEMA, error

pytestmark = pytest.mark.s3

BUCKET = "lakekeeper"
PLUGIN = Path(__file__).parents[1] / "plugins" / "data_grants_authz.py"
VENDED = {"X-Iceberg-Access-Delegation": "vended-credentials"}


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> str:
    """The authorizer as an installed ``lakekeeper`` entry point, for the server subprocess."""
    root = tmp_path_factory.mktemp("lk-data-grants")
    shutil.copy(PLUGIN, root / PLUGIN.name)
    dist = root / "lk_test_data_grants-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lk-test-data-grants\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[lakekeeper]\ndata_grants = {PLUGIN.stem}\n")
    return str(root)


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def grants_server(request, idp, plugin_path, lakekeeper_server_factory):
    env = {
        "PYTHONPATH": os.pathsep.join(p for p in (plugin_path, os.environ.get("PYTHONPATH")) if p),
        "LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri,
        "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper",
        "LAKEKEEPER__AUTHZ_BACKEND": "data-grants",
        "LAKEKEEPER__TEST_READ_ONLY_USERS": "oidc~reader",
        "LAKEKEEPER__TEST_METADATA_ONLY_USERS": "oidc~blind",
    }
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url_factory")()
        env |= {"LAKEKEEPER__PG_DATABASE_URL_WRITE": url, "LAKEKEEPER__PG_DATABASE_URL_READ": url}
    server = lakekeeper_server_factory(env)
    if request.param == "postgres":
        httpx.post(
            server.url + "/management/v1/bootstrap",
            json={"accept-terms-of-use": True},
            headers={"Authorization": f"Bearer {idp.mint('writer')}"},
            timeout=30,
        ).raise_for_status()
    yield server
    server.close()


@pytest.fixture
def as_user(grants_server, idp):
    """``as_user("reader")``: an httpx client sending a fresh token of ``oidc~<subject>``."""
    clients = []

    def make(subject: str) -> httpx.Client:
        client = httpx.Client(base_url=grants_server.url, timeout=60)
        client.event_hooks["request"] = [
            lambda request: request.headers.__setitem__("Authorization", f"Bearer {idp.mint(subject)}")
        ]
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def table(as_user, seaweed_sts):
    """A table created by ``writer`` on a fresh S3 warehouse with STS: (table URL, location, metadata key)."""
    writer = as_user("writer")
    key_prefix = f"t-{uuid.uuid4().hex[:12]}"
    created = writer.post("/management/v1/warehouse", json={
        "warehouse-name": f"wh-{uuid.uuid4().hex[:10]}",
        "storage-profile": {
            "type": "s3", "bucket": BUCKET, "key-prefix": key_prefix, "endpoint": seaweed_sts.endpoint,
            "region": seaweed_sts.region, "path-style-access": True, "flavor": "s3-compat",
            "sts-enabled": True, "sts-role-arn": seaweed_role_arn(STS_ROLE),
        },
        "storage-credential": {
            "type": "s3", "credential-type": "access-key",
            "aws-access-key-id": seaweed_sts.access_key, "aws-secret-access-key": seaweed_sts.secret_key,
        },
    })  # fmt: skip
    assert created.status_code == 201, created.text
    prefix = f"/catalog/v1/{created.json()['warehouse-id']}"
    assert writer.post(f"{prefix}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    response = writer.post(f"{prefix}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA})
    assert response.status_code == 200, response.text
    body = response.json()
    location = body["metadata"]["location"]
    return f"{prefix}/namespaces/ns/tables/t", location, _key(body["metadata-location"])


def _key(location: str) -> str:
    assert location.startswith(f"s3://{BUCKET}/"), location
    return location[len(f"s3://{BUCKET}/"):]


def s3_client(seaweed_sts: SeaweedS3, config: dict[str, str]):
    return seaweed_sts.client(
        aws_access_key_id=config["s3.access-key-id"],
        aws_secret_access_key=config["s3.secret-access-key"],
        aws_session_token=config["s3.session-token"],
    )


def denied(call, **kwargs) -> bool:
    try:
        call(**kwargs)
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "AccessDenied", exc.response
        return True
    return False


def vended_config(client: httpx.Client, table_url: str, **headers: str) -> tuple[dict[str, str], str]:
    response = client.get(table_url, headers={**VENDED, **headers})
    assert response.status_code == 200, response.text
    body = response.json()
    (credential,) = body["storage-credentials"]
    assert credential["config"]["s3.access-key-id"] == body["config"]["s3.access-key-id"]
    return body["config"], response.headers["etag"]


def test_reader_gets_read_only_credentials_and_writer_read_write(as_user, seaweed_sts, table):
    table_url, location, metadata_key = table
    data_key = f"{_key(location)}/data/00000-new.parquet"

    reader_config, reader_etag = vended_config(as_user("reader"), table_url)
    reader = s3_client(seaweed_sts, reader_config)
    assert reader.get_object(Bucket=BUCKET, Key=metadata_key)["Body"].read()
    assert denied(reader.put_object, Bucket=BUCKET, Key=data_key, Body=b"x")
    assert denied(reader.delete_object, Bucket=BUCKET, Key=metadata_key)

    writer_config, writer_etag = vended_config(as_user("writer"), table_url)
    writer = s3_client(seaweed_sts, writer_config)
    assert not denied(writer.put_object, Bucket=BUCKET, Key=data_key, Body=b"x")
    assert writer.get_object(Bucket=BUCKET, Key=data_key)["Body"].read() == b"x"
    assert not denied(writer.delete_object, Bucket=BUCKET, Key=data_key)

    # one metadata version, two shapes of credentials: a reader presenting the writer's tag gets
    # its own read-only credentials, never a 304 that would let it keep the writer's
    assert reader_etag != writer_etag
    again = as_user("reader").get(table_url, headers={**VENDED, "If-None-Match": writer_etag})
    assert again.status_code == 200
    assert denied(s3_client(seaweed_sts, again.json()["config"]).put_object, Bucket=BUCKET, Key=data_key, Body=b"x")
    assert as_user("reader").get(table_url, headers={**VENDED, "If-None-Match": reader_etag}).status_code == 304


def test_credentials_endpoint_follows_the_same_permission(as_user, seaweed_sts, table):
    table_url, location, metadata_key = table
    data_key = f"{_key(location)}/data/00001-new.parquet"

    def refreshed(subject: str):
        response = as_user(subject).get(f"{table_url}/credentials")
        assert response.status_code == 200, response.text
        (credential,) = response.json()["storage-credentials"]
        assert credential["prefix"] == location
        return s3_client(seaweed_sts, credential["config"])

    reader = refreshed("reader")
    assert reader.get_object(Bucket=BUCKET, Key=metadata_key)["Body"].read()
    assert denied(reader.put_object, Bucket=BUCKET, Key=data_key, Body=b"x")
    assert not denied(refreshed("writer").put_object, Bucket=BUCKET, Key=data_key, Body=b"x")


def test_no_data_permission_gets_no_credentials(as_user, table):
    """Lakekeeper: without read_data the load carries no ``config`` and the refresh is refused."""
    table_url, _, _ = table
    blind = as_user("blind")
    loaded = blind.get(table_url, headers=VENDED)
    assert loaded.status_code == 200, loaded.text
    assert "config" not in loaded.json() and "storage-credentials" not in loaded.json()
    assert loaded.json()["metadata"]["location"]
    refused = blind.get(f"{table_url}/credentials")
    assert refused.status_code == 403
    assert error(refused)["type"] == "TableActionForbidden"  # Lakekeeper's type
