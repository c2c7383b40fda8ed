"""Generic tables under the ``openfga`` authorizer, end to end (a served catalog on the OpenFGA API
double, OIDC tokens, SQLite and PostgreSQL): the resource kind ``generic_table`` with Lakekeeper's
generic-table actions, enforced on every route of ``/lakekeeper/v1`` and filtered in lists.

``alice`` bootstraps and owns what she creates. ``bob`` has no grants: a generic table he may not
see answers exactly as a missing one (404 ``NoSuchGenericTableException``), on load, credentials,
drop and rename alike. With ``describe`` he loads it but gets no storage config and no credentials
(403) and may not drop it (403); with ``select`` he gets credentials.

The model's ``lakekeeper_generic_table`` type and the plugin's mapping of the kind are the
governance work (issue 36 shares it): until the plugin knows the kind, this module is skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from openfga_servers import openfga_server

from lakekeeper_authz_openfga.authorizer import fga_object
from lakekeeper_host.service.authz import Resource
from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.server import CatalogServer

try:
    fga_object(Resource("generic_table", str(uuid.uuid4()), str(uuid.uuid4())))
except ValueError:
    pytest.skip("the OpenFGA plugin has no object type for generic tables yet (the governance model adds "
                "lakekeeper_generic_table)", allow_module_level=True)

PERMS = "/management/v1/permissions"


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def world(
    request, double: OpenFgaDouble, idp: OidcIssuer, tmp_path_factory, lakekeeper_server_factory
) -> Iterator[dict]:
    """alice's file warehouse with namespace ``ai`` and the generic table ``ai.frames``."""
    with openfga_server(lakekeeper_server_factory, request.param, double, idp, f"lk-{uuid.uuid4().hex[:8]}") as server:
        with _client(server, idp, "alice") as alice:
            alice.post("/management/v1/bootstrap", json={"accept-terms-of-use": True}).raise_for_status()
            created = alice.post("/management/v1/warehouse", json={
                "warehouse-name": f"wh-{uuid.uuid4().hex[:8]}",
                "storage-profile": {"type": "file", "root": str(tmp_path_factory.mktemp("fga-generic"))},
            })
            assert created.status_code == 201, created.text
            warehouse_id = created.json()["warehouse-id"]
            assert alice.post(f"/catalog/v1/{warehouse_id}/namespaces", json={"namespace": ["ai"]}).status_code == 200
            base = f"/lakekeeper/v1/{warehouse_id}/namespaces/ai/generic-tables"
            made = alice.post(base, json={"name": "frames", "format": "lance"})
            assert made.status_code == 200, made.text
            [ident] = alice.get(base).json()["identifiers"]
        yield {"server": server, "idp": idp, "warehouse_id": warehouse_id, "base": base, "id": ident["id"]}


def _client(server: CatalogServer, idp: OidcIssuer, user: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=60, headers={"Authorization": f"Bearer {idp.mint(user)}"})


def _error(response: httpx.Response) -> dict:
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == response.status_code, body
    return body["error"]


def _assign(world: dict, op: str, relation: str, user: str) -> None:
    path = f"{PERMS}/warehouse/{world['warehouse_id']}/generic-table/{world['id']}/assignments"
    with _client(world["server"], world["idp"], "alice") as alice:
        response = alice.post(path, json={op: [{"type": relation, "user": f"oidc~{user}"}]})
    assert response.status_code == 204, response.text


def test_bob_sees_nothing_until_granted_then_only_what_the_grant_allows(world: dict) -> None:
    base = world["base"]
    with _client(world["server"], world["idp"], "alice") as alice:
        assert alice.get(f"{base}/frames").json()["table"]["name"] == "frames"
        assert alice.get(f"{base}/frames/credentials").status_code == 200
    with _client(world["server"], world["idp"], "bob") as bob:
        for response in (bob.get(f"{base}/frames"), bob.get(f"{base}/frames/credentials"),
                         bob.delete(f"{base}/frames")):
            assert response.status_code == 404 and _error(response)["type"] == "NoSuchGenericTableException"
        hidden, missing = bob.get(f"{base}/frames"), bob.get(f"{base}/no_such")
        assert _error(hidden)["message"] == _error(missing)["message"].replace("no_such", "frames")

        _assign(world, "writes", "describe", "bob")
        loaded = bob.get(f"{base}/frames")
        assert loaded.status_code == 200 and set(loaded.json()) == {"table"}  # no data access: no config
        refused = bob.get(f"{base}/frames/credentials")
        assert refused.status_code == 403 and _error(refused)["type"] == "GenericTableActionForbidden"
        assert bob.delete(f"{base}/frames").status_code == 403

        _assign(world, "writes", "select", "bob")
        assert bob.get(f"{base}/frames/credentials").status_code == 200
        assert "config" in bob.get(f"{base}/frames").json()

        _assign(world, "deletes", "select", "bob")
        _assign(world, "deletes", "describe", "bob")
        assert bob.get(f"{base}/frames").status_code == 404


def test_lists_keep_only_what_the_caller_may_see(world: dict) -> None:
    base = world["base"]
    with _client(world["server"], world["idp"], "alice") as alice:
        assert alice.post(base, json={"name": "shared", "format": "parquet"}).status_code == 200
        [shared] = [i for i in alice.get(base).json()["identifiers"] if i["name"] == "shared"]
        grant = alice.post(f"{PERMS}/warehouse/{world['warehouse_id']}/generic-table/{shared['id']}/assignments",
                           json={"writes": [{"type": "describe", "user": "oidc~carol"}]})
        assert grant.status_code == 204, grant.text
    with _client(world["server"], world["idp"], "carol") as carol:
        listed = carol.get(base)
        assert listed.status_code == 200, listed.text
        assert [i["name"] for i in listed.json()["identifiers"]] == ["shared"]
