"""Trino through OPA, both ways, held to one case table (``trino_cases.py``): the catalog's own Trino
policy endpoint, and the Rego bundle of ``deploy/trino-opa`` on OPA's real engine (the
``opa-golib-python-bindings`` package; those tests skip without it), which asks the same served
catalog through ``POST /management/v1/action/batch-check`` with a technical user's client-credentials
token. A ``lakekeeper serve`` with the ``openfga`` authorizer on the OpenFGA double and OIDC users, on
SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from openfga_servers import openfga_server
from trino_cases import CASES, CATALOGS, IDENTITIES, OPA_CLIENT, build_world, trino_input

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.server import CatalogServer

KEY = uuid.uuid4().hex
OPA_SECRET = "opa-secret"
BUNDLE = Path(__file__).resolve().parents[3] / "deploy" / "trino-opa"
CASE_IDS = [name for name, *_ in CASES]


@pytest.fixture(scope="module")
def idp() -> Iterator[OidcIssuer]:
    with OidcIssuer("trino", audience="lakekeeper", clients={OPA_CLIENT: OPA_SECRET}) as issuer:
        yield issuer


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def served(
    request, double: OpenFgaDouble, idp: OidcIssuer, tmp_path_factory, lakekeeper_server_factory
) -> Iterator[CatalogServer]:
    settings = {
        "LAKEKEEPER__EMBEDDED_QUICKSTART": "false",
        "LAKEKEEPER__TRINO_OPA__KEY": KEY,
        "LAKEKEEPER__TRINO_OPA__CATALOGS": ",".join(f"{c}={w}" for c, w in CATALOGS.items()),
        "LAKEKEEPER__LOG_LEVEL": "debug",  # with the request log, which must not show the key
        "LAKEKEEPER__DEBUG__LOG_REQUEST_BODIES": "true",
    }
    with openfga_server(lakekeeper_server_factory,
                        request.param, double, idp, f"trino-{uuid.uuid4().hex[:8]}", **settings) as server:
        build_world(server, idp.mint, str(tmp_path_factory.mktemp("trino-wh")))
        yield server


@pytest.fixture(scope="module")
def policy_client(served: CatalogServer) -> Iterator[httpx.Client]:
    """One client for the case table's thousand requests: a new httpx client per request (``httpx.post``)
    builds a TLS context each time, which costs far more than the request on a loaded machine."""
    with httpx.Client(base_url=served.url, timeout=60) as client:
        yield client


def ask_catalog(client: httpx.Client, endpoint: str, document: dict, key: str = KEY) -> httpx.Response:
    return client.post(f"/trino/{key}/{endpoint}", json={"input": document})


@pytest.mark.parametrize("name, endpoint, action, expected", CASES, ids=CASE_IDS)
def test_the_catalog_answers_trino_itself(policy_client, name, endpoint, action, expected) -> None:
    answers = {}
    for identity in IDENTITIES:
        response = ask_catalog(policy_client, endpoint, trino_input(identity, action))
        assert response.status_code == 200, response.text
        answers[identity] = response.json()["result"]
    assert answers == expected


def test_without_the_key_there_is_no_policy_endpoint(policy_client) -> None:
    document = trino_input("owner", {"operation": "ExecuteQuery"})
    for key in ("wrong", KEY[:-1], KEY.upper() if KEY.upper() != KEY else "x"):
        refused = ask_catalog(policy_client, "allow", document, key)
        assert refused.status_code == 404, refused.text
    # a user's own bearer token does not stand in for the key
    assert (
        policy_client.post(
            "/trino/x/allow", json={"input": document}, headers={"Authorization": "Bearer nonsense"}
        ).status_code
        == 404
    )


def test_the_request_log_does_not_show_the_key(served, policy_client) -> None:
    assert ask_catalog(policy_client, "allow", trino_input("owner", {"operation": "ExecuteQuery"})).status_code == 200
    log = served.log_path.read_text(errors="replace")
    assert "/trino/<redacted>/allow" in log
    assert KEY not in log


def test_a_malformed_input_is_a_400(policy_client) -> None:
    for body in (
        {"input": {"action": {"operation": "ExecuteQuery"}}},
        {"inputs": {}},
        {"input": {"context": {"identity": {"user": "bob"}}, "action": {}}},
    ):
        response = policy_client.post(f"/trino/{KEY}/allow", json=body)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["type"] == "BadRequestException"


def test_a_batch_over_the_documented_limit_is_a_400_and_one_at_it_is_decided(policy_client) -> None:
    def filter_tables(count: int) -> dict:
        resources = [{"table": {"catalogName": "lake", "schemaName": "sales", "tableName": f"t{i}"}}
                     for i in range(count)]
        return trino_input("owner", {"operation": "FilterTables", "filterResources": resources})

    too_many = ask_catalog(policy_client, "batch", filter_tables(10_001))
    assert too_many.status_code == 400, too_many.text
    error = too_many.json()["error"]
    assert error["type"] == "TooManyFilterResources" and "at most 10000" in error["message"]
    at_limit = ask_catalog(policy_client, "batch", filter_tables(10_000))
    assert at_limit.status_code == 200 and at_limit.json() == {"result": []}  # none of these names exist


@pytest.fixture(scope="module")
def opa_engine_class():
    """OPA's engine; the tests that need it skip, before any server starts, without the package."""
    module = pytest.importorskip(
        "opa_bindings.engine", reason="opa-golib-python-bindings is not installed (scripts/install-test-deps.sh)"
    )
    return module.OpaEngine


@pytest.fixture(scope="module", params=["by name", "listed"])
def opa(request, opa_engine_class, served, idp: OidcIssuer):
    """OPA's engine with the shipped bundle, configured for the served catalog as data.example.json
    shows. Twice: tables checked by name (the few names of these cases), and listed with their ids
    first (what the bundle does for many names: ``listing_threshold``)."""
    engine = opa_engine_class()
    for path in sorted((BUNDLE / "lakekeeper_trino").glob("*.rego")):
        engine.add_policy(path.name, path.read_text())
    config = json.loads((BUNDLE / "data.example.json").read_text())["lakekeeper_trino_config"]
    config |= {
        "url": served.url,
        "token_endpoint": idp.token_endpoint,
        "client_id": OPA_CLIENT,
        "client_secret": OPA_SECRET,
        "catalogs": CATALOGS,
        "listing_threshold": 1 if request.param == "listed" else 1000,
    }
    engine.add_data({"lakekeeper_trino_config": config})
    yield engine
    engine.close()


def ask_opa(engine, endpoint: str, document: dict):
    return engine.eval_document(f"lakekeeper_trino.{endpoint}", input=document)


@pytest.mark.parametrize("name, endpoint, action, expected", CASES, ids=CASE_IDS)
def test_the_rego_bundle_decides_the_same_through_batch_checks(opa, name, endpoint, action, expected) -> None:
    answers = {identity: ask_opa(opa, endpoint, trino_input(identity, action)) for identity in IDENTITIES}
    assert answers == expected


def test_many_names_are_listed_once_and_checked_by_id(opa, served) -> None:
    """With ``listing_threshold`` reached, the bundle lists the schema (tables and views, their ids)
    instead of asking the catalog to look up each name."""
    action = {
        "operation": "FilterTables",
        "filterResources": [
            {"table": {"catalogName": "lake", "schemaName": "sales", "tableName": name}}
            for name in ("orders", "customers", "orders_summary")
        ],
    }
    before = served.log_path.read_text(errors="replace").count("/namespaces/sales/views -> 200")
    assert ask_opa(opa, "batch", trino_input("member", action)) == [0, 1, 2]
    listed = served.log_path.read_text(errors="replace").count("/namespaces/sales/views -> 200") - before
    assert listed == (1 if opa_mode(opa) == "listed" else 0)


def test_a_generic_table_is_never_a_trino_table(opa, policy_client) -> None:
    """The owner may see everything, but a generic table named like a Trino table is not one: both
    ways keep only the real table (the catalog looks names up whatever their kind)."""
    action = {
        "operation": "FilterTables",
        "filterResources": [
            {"table": {"catalogName": "lake", "schemaName": "sales", "tableName": name}}
            for name in ("orders", "frames", "FRAMES")
        ],
    }
    native = ask_catalog(policy_client, "batch", trino_input("owner", action))
    assert native.status_code == 200 and native.json() == {"result": [0]}
    assert ask_opa(opa, "batch", trino_input("owner", action)) == [0]
    select = {"operation": "SelectFromColumns", "resource": {"table": {
        "catalogName": "lake", "schemaName": "sales", "tableName": "frames", "columns": ["id"]}}}
    assert ask_catalog(policy_client, "allow", trino_input("owner", select)).json() == {"result": False}
    assert ask_opa(opa, "allow", trino_input("owner", select)) is False


def opa_mode(engine) -> str:
    return "listed" if engine.eval_document("lakekeeper_trino.listing_threshold") == 1 else "by name"


def test_a_hostile_input_is_denied_or_a_400_and_never_puts_the_key_in_the_log(served) -> None:
    """Whoever holds the key may send anything Trino would never send: names the database cannot
    store, user names OpenFGA cannot parse, objects where names belong. Each is a 400 or a denial,
    never a 500 (whose log line would name the request's path, and with it the key)."""

    def table(catalog="lake", schema="sales", name="orders") -> dict:
        return {"table": {"catalogName": catalog, "schemaName": schema, "tableName": name}}

    hostile = [
        ("allow", trino_input("owner", {"operation": "ShowColumns", "resource": table(catalog="la\x00ke")})),
        ("allow", trino_input("owner", {"operation": "ShowColumns", "resource": table(schema="sa\x00les")})),
        ("allow", trino_input("owner", {"operation": "ShowColumns", "resource": table(name="or\x00ders")})),
        ("allow", trino_input("owner", {"operation": "ShowColumns", "resource": table(schema="sales..x")})),
        ("allow", trino_input("owner", {"operation": "ShowColumns", "resource": table(name=["orders"])})),
        ("allow", trino_input("owner", {"operation": "AccessCatalog", "resource": {"catalog": {"name": "\ud800"}}})),
        ("batch", trino_input("owner", {"operation": "FilterColumns", "filterResources": [None]})),
        ("batch", trino_input("owner", {"operation": "FilterTables", "filterResources": [table(catalog="l\x00")]})),
    ]
    for user in ("own\x00er", "own\ud800er", "owner#member", "user:x", "a" * 10_000):
        document = trino_input("owner", {"operation": "ShowColumns", "resource": table()})
        document["context"]["identity"]["user"] = user
        hostile.append(("allow", document))
    for endpoint, document in hostile:
        body = json.dumps({"input": document}).encode()
        response = httpx.post(
            f"{served.url}/trino/{KEY}/{endpoint}",
            content=body,
            timeout=60,
            headers={"Content-Type": "application/json"},
        )
        assert response.status_code in (200, 400), (document, response.text)
        if response.status_code == 200:
            assert response.json()["result"] in (False, []), (document, response.text)
    assert KEY not in served.log_path.read_text(errors="replace")
