"""``lakekeeper migrate`` and ``lakekeeper serve`` with ``LAKEKEEPER__AUTHZ_BACKEND=openfga``, as subprocesses,
against the OpenFGA API double (no OpenFGA server can run here; see ``lakekeeper_testing.openfga_double``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid

import httpx

from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.server import CatalogServer


def openfga_env(double: OpenFgaDouble, store_name: str) -> dict[str, str]:
    return {
        "LAKEKEEPER__AUTHZ_BACKEND": "openfga",
        "LAKEKEEPER__OPENFGA__ENDPOINT": double.url,
        "LAKEKEEPER__OPENFGA__STORE_NAME": store_name,
        "LAKEKEEPER__OPENFGA__CLIENT_ID": "lakekeeper",
        "LAKEKEEPER__OPENFGA__CLIENT_SECRET": "very-secret-value",
        "LAKEKEEPER__OPENFGA__TOKEN_ENDPOINT": "http://127.0.0.1:9/token",
    }


def run_cli(args: list[str], env: dict[str, str], data_dir: str) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LAKEKEEPER__")}
    full_env.update(env, LAKEKEEPER__DATA_DIR=data_dir)
    return subprocess.run([sys.executable, "-m", "lakekeeper_host", *args], env=full_env, capture_output=True,
                          text=True, timeout=120)


def test_migrate_writes_the_store_and_model_once(double: OpenFgaDouble, tmp_path) -> None:
    store_name = f"lk-{uuid.uuid4().hex[:8]}"
    env = openfga_env(double, store_name)
    # no token endpoint runs here: plain access for this test (API keys are tested in test_authorizer.py)
    env.pop("LAKEKEEPER__OPENFGA__CLIENT_ID")
    env.pop("LAKEKEEPER__OPENFGA__CLIENT_SECRET")
    env.pop("LAKEKEEPER__OPENFGA__TOKEN_ENDPOINT")
    first = run_cli(["migrate"], env, str(tmp_path))
    assert first.returncode == 0, first.stderr
    assert f"openfga: created store '{store_name}'" in first.stdout
    assert "wrote model collaboration-4.9" in first.stdout
    second = run_cli(["migrate"], env, str(tmp_path))
    assert second.returncode == 0, second.stderr
    assert "created store" not in second.stdout and "wrote model" not in second.stdout
    assert f"openfga: store '{store_name}'" in second.stdout
    assert len(double.store_named(store_name).models) == 1


def test_an_incomplete_configuration_stops_the_cli_with_the_setting_named(double: OpenFgaDouble, tmp_path) -> None:
    env = openfga_env(double, "lk-bad")
    env.pop("LAKEKEEPER__OPENFGA__TOKEN_ENDPOINT")
    result = run_cli(["migrate"], env, str(tmp_path))
    assert result.returncode == 2
    assert "CLIENT_SECRET and TOKEN_ENDPOINT" in result.stderr
    assert "very-secret-value" not in result.stderr + result.stdout


def test_serve_builds_the_authorizer_and_reports_it_healthy(double: OpenFgaDouble, lakekeeper_server_factory) -> None:
    store_name = f"lk-{uuid.uuid4().hex[:8]}"
    env = {"LAKEKEEPER__AUTHZ_BACKEND": "openfga", "LAKEKEEPER__OPENFGA__ENDPOINT": double.url,
           "LAKEKEEPER__OPENFGA__STORE_NAME": store_name, "LAKEKEEPER__OPENFGA__API_KEY": "fga-api-key-4711"}
    server = lakekeeper_server_factory(env, timeout=120)  # embedded: migrates the store and model before serving
    try:
        health = httpx.get(server.url + "/health", timeout=10).json()
        assert health["checks"]["authorizer"] == "healthy"
        assert double.store_named(store_name) is not None
        assert "fga-api-key-4711" not in server.log_tail(400)
        assert set(double.authorization_headers[-3:]) == {"Bearer fga-api-key-4711"}
    finally:
        server.close()


async def _register_user(server: CatalogServer, user_id: str) -> None:
    """What the first ``GET /config`` of an authenticated user writes, straight into the server's database."""
    from lakekeeper_host.store import Store
    from lakekeeper_host.store import users as user_store

    store = Store(server.store_url())
    await store.connect()
    try:
        await user_store.insert_user_if_absent(store, user_id, "Alice", None, "human", "config-call-creation")
    finally:
        await store.disconnect()


def test_anonymous_callers_see_no_users(double: OpenFgaDouble, lakekeeper_server_factory) -> None:
    """Without authentication every caller is anonymous: the openfga authorizer lets them read no
    user (the same 404 as a missing one), search none and list none (Lakekeeper: search needs an
    authenticated caller)."""
    env = {"LAKEKEEPER__AUTHZ_BACKEND": "openfga", "LAKEKEEPER__OPENFGA__ENDPOINT": double.url,
           "LAKEKEEPER__OPENFGA__STORE_NAME": f"lk-{uuid.uuid4().hex[:8]}"}
    server = lakekeeper_server_factory(env, timeout=120)
    try:
        asyncio.run(_register_user(server, "oidc~alice"))  # anonymous callers cannot register anyone
        with httpx.Client(base_url=server.url, timeout=30) as anonymous:
            hidden = anonymous.get("/management/v1/user/oidc~alice")
            missing = anonymous.get("/management/v1/user/oidc~nobody")
            assert hidden.status_code == missing.status_code == 404
            assert hidden.json()["error"]["type"] == missing.json()["error"]["type"] == "UserNotFound"
            assert anonymous.post("/management/v1/search/user", json={"search": "alice"}).status_code == 403
            assert anonymous.get("/management/v1/user").status_code == 403
    finally:
        server.close()


def test_migrate_upgrades_a_store_of_the_previous_model_without_losing_a_grant(double: OpenFgaDouble,
                                                                                tmp_path) -> None:
    """A store written by model collaboration-1.2 (types ``table``/``view``, ids ``table:<id>``,
    managed access for users only), with grants in it: ``lakekeeper migrate`` writes model 4.9
    and rewrites every tuple to Lakekeeper's names; every grant decides as before."""
    import json
    from pathlib import Path

    from lakekeeper_authz_openfga.model import load_model
    from lakekeeper_testing.openfga_double import evaluate_offline

    store_name = f"lk-{uuid.uuid4().hex[:8]}"
    legacy_model = json.loads(Path(__file__).with_name("legacy_model_1_2.json").read_text())
    legacy = [
        ("warehouse:w1", "parent", "namespace:sales"), ("namespace:sales", "namespace", "warehouse:w1"),
        ("namespace:sales", "parent", "namespace:eu"), ("namespace:eu", "child", "namespace:sales"),
        ("namespace:eu", "parent", "table:orders"), ("table:orders", "child", "namespace:eu"),
        ("namespace:sales", "parent", "view:daily"), ("view:daily", "child", "namespace:sales"),
        ("user:alice", "ownership", "table:orders"), ("user:bob", "select", "table:orders"),
        ("role:analysts#assignee", "describe", "view:daily"), ("user:carol", "assignee", "role:analysts"),
        ("user:*", "managed_access", "namespace:eu"),
        ("namespace:gone", "parent", "table:orphan"), ("user:dave", "select", "table:orphan"),
    ]
    with httpx.Client(base_url=double.url, timeout=30) as fga:
        store_id = fga.post("/stores", json={"name": store_name}).json()["id"]
        model_id = fga.post(f"/stores/{store_id}/authorization-models", json=legacy_model).json()[
            "authorization_model_id"]
        writes = [*legacy, (f"auth_model_id:{model_id}", "openfga_id", "model_version:collaboration-1.2")]
        written = fga.post(f"/stores/{store_id}/write", json={"authorization_model_id": model_id, "writes": {
            "tuple_keys": [{"user": u, "relation": r, "object": o} for u, r, o in writes]}})
        assert written.status_code == 200, written.text
    env = openfga_env(double, store_name)
    for key in ("CLIENT_ID", "CLIENT_SECRET", "TOKEN_ENDPOINT"):
        env.pop(f"LAKEKEEPER__OPENFGA__{key}")
    result = run_cli(["migrate"], env, str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "wrote model collaboration-4.9" in result.stdout

    tuples = set(double.store_named(store_name).tuples.keys)
    orders, daily = "lakekeeper_table:w1/orders", "lakekeeper_view:w1/daily"
    assert {("user:alice", "ownership", orders), ("user:bob", "select", orders), ("namespace:eu", "parent", orders),
            (orders, "child", "namespace:eu"), ("role:analysts#assignee", "describe", daily),
            ("namespace:sales", "parent", daily), ("role:*", "managed_access", "namespace:eu")} <= tuples
    left = {t for t in tuples if t[0].startswith(("table:", "view:")) or t[2].startswith(("table:", "view:"))}
    # an object without a place in the tree cannot get a warehouse: it keeps its tuples (reconcile's job)
    assert left == {("namespace:gone", "parent", "table:orphan"), ("user:dave", "select", "table:orphan")}
    engine, index = evaluate_offline(load_model(), tuples - left)
    assert engine.check(index, "user:bob", "can_read_data", orders)
    assert not engine.check(index, "user:bob", "can_write_data", orders)
    assert engine.check(index, "user:alice", "can_drop", orders)
    assert not engine.check(index, "user:alice", "can_grant_select", orders)  # managed access above it
    assert engine.check(index, "user:carol", "can_get_metadata", daily)

    again = run_cli(["migrate"], env, str(tmp_path))  # nothing left to do
    assert again.returncode == 0, again.stderr
    assert set(double.store_named(store_name).tuples.keys) == tuples
