"""Lakekeeper's settings change what clients see: reserved namespaces, page sizes, the base URI,
the default project. In-process app on the embedded default (SQLite + the ``demo`` warehouse)."""

from __future__ import annotations

from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.plugins import make_plugin_manager

NIL = "00000000-0000-0000-0000-000000000000"


def make_app(tmp_path, **env):
    environ = {"LAKEKEEPER__DATA_DIR": str(tmp_path), **{f"LAKEKEEPER__{k}": v for k, v in env.items()}}
    return create_app(load_settings(environ), make_plugin_manager(load_entrypoints=False))


async def demo_prefix(client) -> str:
    config = await (await client.get("/catalog/v1/config?warehouse=demo")).get_json()
    return config["defaults"]["prefix"]


async def test_reserved_namespaces_are_refused(tmp_path):
    async with make_app(tmp_path, RESERVED_NAMESPACES="Staging,tmp").test_app() as app:
        client = app.test_client()
        namespaces = f"/catalog/v1/{await demo_prefix(client)}/namespaces"
        for name in ("system", "staging", "TMP"):  # Lakekeeper's own, then the configured ones (any case)
            response = await client.post(namespaces, json={"namespace": [name]})
            assert response.status_code == 400, (name, await response.get_data())
            assert "reserved" in (await response.get_json())["error"]["message"].lower()
        assert (await client.post(namespaces, json={"namespace": ["sales"]})).status_code == 200


async def test_page_sizes_follow_pagination_settings(tmp_path):
    async with make_app(tmp_path, PAGINATION_SIZE_DEFAULT="2", PAGINATION_SIZE_MAX="3").test_app() as app:
        client = app.test_client()
        namespaces = f"/catalog/v1/{await demo_prefix(client)}/namespaces"
        for i in range(5):
            assert (await client.post(namespaces, json={"namespace": [f"ns{i}"]})).status_code == 200
        config = await (await client.get("/catalog/v1/config?warehouse=demo")).get_json()
        assert config["defaults"]["rest-page-size"] == "2"

        first = await (await client.get(namespaces + "?pageToken=")).get_json()
        assert [n[0] for n in first["namespaces"]] == ["ns0", "ns1"] and first["next-page-token"]
        capped = await (await client.get(namespaces + "?pageToken=&pageSize=100")).get_json()
        assert len(capped["namespaces"]) == 3
        rest, token = [], capped["next-page-token"]
        while token:
            page = await (await client.get(namespaces + f"?pageToken={token}&pageSize=100")).get_json()
            rest += page["namespaces"]
            token = page.get("next-page-token")
        assert [n[0] for n in capped["namespaces"] + rest] == [f"ns{i}" for i in range(5)]


async def test_base_uri_is_what_clients_are_told_to_use(tmp_path):
    async with make_app(tmp_path, BASE_URI="https://lakekeeper.example.com/").test_app() as app:
        config = await (await app.test_client().get("/catalog/v1/config?warehouse=demo")).get_json()
    assert config["overrides"]["uri"] == "https://lakekeeper.example.com/catalog"


async def test_default_project_id_and_disabling_the_default_project(tmp_path):
    custom = "11111111-2222-3333-4444-555555555555"
    async with make_app(tmp_path / "custom", DEFAULT_PROJECT_ID=custom).test_app() as app:
        warehouses = await (await app.test_client().get("/management/v1/warehouse")).get_json()
    assert {w["project-id"] for w in warehouses["warehouses"]} == {custom}

    off = make_app(tmp_path / "off", ENABLE_DEFAULT_PROJECT="false", EMBEDDED_QUICKSTART="false")
    async with off.test_app() as app:
        client = app.test_client()
        response = await client.get("/management/v1/warehouse")
        assert response.status_code == 400
        assert (await response.get_json())["error"]["type"] == "NoProjectIdProvided"
        created = await client.post("/management/v1/project", json={"project-name": "explicit"})
        project_id = (await created.get_json())["project-id"]
        listed = await client.get("/management/v1/warehouse", headers={"x-project-id": project_id})
        assert listed.status_code == 200 and (await listed.get_json())["warehouses"] == []
