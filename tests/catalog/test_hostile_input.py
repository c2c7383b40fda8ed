"""Hostile input the catalog must refuse with a 400, never store and never answer with a 500 (issue 30),
on SQLite and PostgreSQL:

* a lone UTF-16 surrogate (``"\\ud800"``) or U+0000 inside any JSON body: no engine, no JSON encoder
  and no PostgreSQL text column can hold it, so the one JSON parser refuses it for every route;
* table, view and namespace names no engine can address or show safely (``.``, ``..``, control
  characters, bidirectional overrides, 100,000 characters), while the names real catalogs use (spaces,
  ``/``, unicode letters, Spark's odd punctuation) keep working;
* namespace and table properties past the documented size (a 21 MB blob was stored and returned by
  every load).
"""

from __future__ import annotations

import httpx
import pytest

from lakekeeper_host.server.names import MAX_NAME_LENGTH, MAX_PROPERTIES_BYTES

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
LONE_SURROGATES = ('"a\\ud800b"', '"\\udc00"', '"x\\uDBFFy"', '"\\u0000"')


def _refused(response: httpx.Response) -> dict:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"]["code"] == 400 and "Traceback" not in response.text, body
    return body["error"]


def _post_raw(http: httpx.Client, url: str, raw: str) -> httpx.Response:
    return http.post(url, content=raw.encode("ascii"), headers={"Content-Type": "application/json"})


@pytest.fixture
def ns(http, prefix_url) -> str:
    assert http.post(f"{prefix_url}/namespaces", json={"namespace": ["ns"]}).status_code == 200
    assert http.post(f"{prefix_url}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}).status_code == 200
    return f"{prefix_url}/namespaces/ns"


@pytest.mark.parametrize("text", LONE_SURROGATES)
def test_a_lone_surrogate_or_nul_in_json_is_400_on_every_route(http, server, prefix_url, ns, text) -> None:
    management = f"{server.url}/management/v1"
    for url, raw in [
        (f"{prefix_url}/namespaces", f'{{"namespace": [{text}]}}'),
        (f"{prefix_url}/namespaces", f'{{"namespace": ["ok"], "properties": {{"k": {text}}}}}'),
        (f"{ns}/properties", f'{{"updates": {{"k": {text}}}}}'),
        (f"{ns}/properties", f'{{"updates": {{{text}: "v"}}}}'),  # a key too
        (f"{ns}/tables", f'{{"name": {text}, "schema": {{"type": "struct", "fields": []}}}}'),
        (f"{ns}/tables/t", f'{{"updates": [{{"action": "set-properties", "updates": {{"k": {text}}}}}]}}'),
        (f"{prefix_url}/tables/rename",
         f'{{"source": {{"namespace": ["ns"], "name": "t"}}, "destination": {{"namespace": ["ns"], "name": {text}}}}}'),
        (f"{management}/search/user", f'{{"search": {text}}}'),
    ]:
        _refused(_post_raw(http, url, raw))
    # nothing was stored: the read lane still answers the namespace and the table, and lists them
    loaded = http.get(ns)
    assert loaded.status_code == 200 and set(loaded.json()["properties"]) <= {"location", "namespace_id"}
    assert http.get(f"{ns}/tables/t").status_code == 200
    assert http.get(f"{prefix_url}/namespaces").json()["namespaces"] == [["ns"]]
    assert http.get(f"{ns}/tables").json()["identifiers"] == [{"namespace": ["ns"], "name": "t"}]


def test_a_valid_surrogate_pair_is_one_character_and_welcome(http, prefix_url) -> None:
    made = _post_raw(http, f"{prefix_url}/namespaces", '{"namespace": ["smile\\ud83d\\ude00"]}')
    assert made.status_code == 200, made.text
    assert http.get(f"{prefix_url}/namespaces").json()["namespaces"] == [["smile\U0001f600"]]


def test_undecodable_bytes_in_read_lane_paths_are_a_plain_404(http, prefix_url, ns) -> None:
    for path in ("/namespaces/a%ED%A0%80b", "/namespaces/ns/tables/a%ED%A0%80b", "/namespaces/ns/views/%ED%A0%80"):
        response = http.get(f"{prefix_url}{path}")
        assert response.status_code == 404, response.text
    assert http.get(f"{prefix_url}/namespaces?parent=a%ED%B2%80").status_code == 404


REFUSED_NAMES = [".", "..", "a\x00b", "a\nb", "tab\there", "a\x7fb", "bell\x07", "a\u202eb", "a\u2066b", "a\u200fb",
                 "x" * (MAX_NAME_LENGTH + 1), "x" * 100_000]
ACCEPTED_NAMES = ["with space", "a/b", "sales 2025 % = , ü", "ünïcödé ✓", "日本語", "x" * MAX_NAME_LENGTH, "a.b.",
                  "..x"]


@pytest.mark.parametrize("name", REFUSED_NAMES, ids=repr)
def test_names_no_engine_can_round_trip_are_refused(http, prefix_url, ns, name) -> None:
    version = {"version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {}, "default-namespace": ["ns"],
               "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}]}
    _refused(http.post(f"{ns}/tables", json={"name": name, "schema": SCHEMA}))
    _refused(http.post(f"{ns}/views", json={"name": name, "schema": SCHEMA, "view-version": version}))
    rename = {"source": {"namespace": ["ns"], "name": "t"}, "destination": {"namespace": ["ns"], "name": name}}
    _refused(http.post(f"{prefix_url}/tables/rename", json=rename))
    if "." not in name:  # a dot in a namespace part has its own 400 (Lakekeeper)
        _refused(http.post(f"{prefix_url}/namespaces", json={"namespace": [name]}))
        _refused(http.post(f"{prefix_url}/namespaces", json={"namespace": ["ns", name]}))
    assert http.get(f"{ns}/tables").json()["identifiers"] == [{"namespace": ["ns"], "name": "t"}]


def test_names_real_catalogs_use_are_accepted(http, prefix_url, ns) -> None:
    for name in ACCEPTED_NAMES:
        made = http.post(f"{ns}/tables", json={"name": name, "schema": SCHEMA})
        assert made.status_code == 200, (name, made.text)
        loaded = http.get(f"{ns}/tables/{httpx.URL('/' + name).raw_path.decode()[1:].replace('/', '%2F')}")
        assert loaded.status_code == 200, (name, loaded.text)
    for name in ("with space", "ünïcödé ✓", "x" * MAX_NAME_LENGTH):
        made = http.post(f"{prefix_url}/namespaces", json={"namespace": [name]})
        assert made.status_code == 200, (name, made.text)


def test_properties_past_the_limit_are_refused_and_not_stored(http, prefix_url, ns) -> None:
    blob = "v" * MAX_PROPERTIES_BYTES
    error = _refused(http.post(f"{prefix_url}/namespaces", json={"namespace": ["big"], "properties": {"k": blob}}))
    assert str(MAX_PROPERTIES_BYTES) in error["message"]
    assert http.get(f"{prefix_url}/namespaces/big").status_code == 404
    _refused(http.post(f"{ns}/properties", json={"updates": {"k": blob}}))
    # many small ones add up too
    half = "v" * (MAX_PROPERTIES_BYTES // 2)
    assert http.post(f"{ns}/properties", json={"updates": {"a": half}}).status_code == 200
    _refused(http.post(f"{ns}/properties", json={"updates": {"b": half}}))
    assert set(http.get(ns).json()["properties"]) >= {"a"} and "b" not in http.get(ns).json()["properties"]
    # tables: on create and in a commit
    _refused(http.post(f"{ns}/tables", json={"name": "big", "schema": SCHEMA, "properties": {"k": blob}}))
    commit = {"updates": [{"action": "set-properties", "updates": {"k": blob}}]}
    _refused(http.post(f"{ns}/tables/t", json=commit))
    assert "k" not in http.get(f"{ns}/tables/t").json()["metadata"].get("properties", {})
