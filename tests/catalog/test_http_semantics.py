"""HTTP semantics of the catalog routes (issue 4): HEAD answers existence without a body, OPTIONS and
405 name the allowed methods, and an unknown update or requirement type is a 400 that names it --
for single-table commits, multi-table transactions and views -- changing nothing.
"""

from __future__ import annotations

import httpx
import pytest

from tests.catalog.helpers import SCHEMA, error

VIEW_VERSION = {
    "version-id": 1, "schema-id": 0, "timestamp-ms": 1, "summary": {"operation": "create"},
    "default-namespace": ["ns"], "representations": [{"type": "sql", "sql": "select 1", "dialect": "spark"}],
}


def head(rest, path: str) -> httpx.Response:
    response = rest.http.head(path)
    assert response.content == b"", f"HEAD {path} sent a body"
    return response


def test_head_answers_existence_without_a_body(rest, server, warehouse):
    assert rest.create_namespace("ns").status_code == 200
    assert rest.create_table("ns", "t").status_code == 200
    view = {"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION}
    assert rest.http.post("/namespaces/ns/views", json=view).status_code == 200

    assert head(rest, "/namespaces/ns").status_code == 204
    assert head(rest, "/namespaces/ns/tables/t").status_code == 204
    assert head(rest, "/namespaces/ns/views/v").status_code == 204
    for missing in (
        "/namespaces/nope",
        "/namespaces/ns/tables/nope",
        "/namespaces/nope/tables/t",  # in a missing namespace
        "/namespaces/ns/tables/v",  # a view is not a table
        "/namespaces/ns/views/t",  # and a table is not a view
        "/namespaces/ns/views/nope",
    ):
        assert head(rest, missing).status_code == 404, missing

    # HEAD on a GET route is the GET without its body: same status and headers
    for path in ("/namespaces", "/namespaces/ns/tables", "/namespaces/ns/views"):
        got, headed = rest.http.get(path), head(rest, path)
        assert headed.status_code == got.status_code == 200
        assert headed.headers["content-type"] == got.headers["content-type"]
        assert int(headed.headers["content-length"]) == len(got.content)
    config = httpx.head(f"{server.url}/catalog/v1/config", params={"warehouse": warehouse["name"]})
    assert config.status_code == 200 and config.content == b""


def test_options_and_405_name_the_allowed_methods(rest, server):
    rest.create_namespace("ns")
    rest.create_table("ns", "t")

    def allowed(response: httpx.Response) -> set[str]:
        return {m.strip() for m in response.headers["allow"].split(",")}

    table = rest.http.options("/namespaces/ns/tables/t")
    assert table.status_code in (200, 204)
    assert allowed(table) >= {"GET", "HEAD", "POST", "DELETE"} and "PUT" not in allowed(table)
    config = httpx.options(f"{server.url}/catalog/v1/config")
    assert allowed(config) >= {"GET", "HEAD"} and "POST" not in allowed(config)
    assert allowed(rest.http.options("/transactions/commit")) >= {"POST"}

    # a method the route does not serve: 405 in the Iceberg error model, with Allow
    wrong = rest.http.put("/namespaces/ns/tables/t", json={})
    assert wrong.status_code == 405
    assert error(wrong)["type"] == "MethodNotAllowed"
    assert "PUT" in error(wrong)["message"]
    assert allowed(wrong) >= {"GET", "HEAD", "POST", "DELETE"} and "PUT" not in allowed(wrong)
    # and an unknown route is a 404 in the error model for OPTIONS as for anything else
    unknown = rest.http.options("/no-such-route")
    assert unknown.status_code == 404 and error(unknown)["type"] == "NotFoundException"


def test_unknown_update_and_requirement_types_are_400_naming_them(rest):
    rest.create_namespace("ns")
    rest.create_table("ns", "t")
    before = rest.load("ns", "t").json()["metadata-location"]
    good = {"action": "set-properties", "updates": {"k": "v"}}

    cases = [
        ([good, {"action": "frobnicate-table"}], [], "frobnicate-table"),
        ([good], [{"type": "assert-frobnicated"}], "assert-frobnicated"),
    ]
    for updates, requirements, name in cases:
        single = rest.commit("ns", "t", updates, requirements)
        assert single.status_code == 400, single.text
        assert name in error(single)["message"]
        change = {"identifier": {"namespace": ["ns"], "name": "t"}, "updates": updates, "requirements": requirements}
        multi = rest.transaction([change])
        assert multi.status_code == 400, multi.text
        assert name in error(multi)["message"]
    # an update without an action says so too
    nameless = rest.commit("ns", "t", [{"updates": {"k": "v"}}])
    assert nameless.status_code == 400 and "action" in error(nameless)["message"]
    # nothing was applied: not even the good update next to the bad one
    after = rest.load("ns", "t").json()
    assert after["metadata-location"] == before and "k" not in after["metadata"]["properties"]

    # views answer the same way
    view = {"name": "v", "schema": SCHEMA, "view-version": VIEW_VERSION}
    assert rest.http.post("/namespaces/ns/views", json=view).status_code == 200
    for body, name in (
        ({"updates": [{"action": "frobnicate-view"}]}, "frobnicate-view"),
        ({"requirements": [{"type": "assert-view-frob"}], "updates": []}, "assert-view-frob"),
    ):
        response = rest.http.post("/namespaces/ns/views/v", json=body)
        assert response.status_code == 400 and name in error(response)["message"], response.text


def test_malformed_commits_are_400_not_500(rest):  # found by tests/drills (fuzzing)
    rest.create_namespace("ns")
    rest.create_table("ns", "t")
    unreadable_default = {"type": "struct", "schema-id": 1, "fields": [
        {"id": 1, "name": "a", "required": False, "initial-default": "x"}]}  # no type (pyiceberg raised TypeError)
    for updates, message in (
        ([{"action": {"set-properties": 1}}], "Unsupported table update action"),  # an action that is not a string
        # the body validation names the missing type before pyiceberg parses the schema
        ([{"action": "add-schema", "schema": unreadable_default}], "updates[0].schema.fields[0].type: is required"),
    ):
        single = rest.commit("ns", "t", updates)
        assert single.status_code == 400 and message in error(single)["message"], single.text
        multi = rest.transaction([{"identifier": {"namespace": ["ns"], "name": "t"}, "updates": updates}])
        assert multi.status_code == 400 and message in error(multi)["message"], multi.text
    unhashable = rest.commit("ns", "t", [], [{"type": ["assert-create"]}])
    assert unhashable.status_code == 400 and "Unsupported table requirement type" in error(unhashable)["message"]


@pytest.mark.parametrize("kind", ["tables", "views"])
def test_register_with_a_malformed_body_names_the_field(prefix_url, kind):
    assert httpx.post(f"{prefix_url}/namespaces", json={"namespace": ["reg"]}).status_code == 200
    register = f"{prefix_url}/namespaces/reg/register" + ("-view" if kind == "views" else "")
    cases = [
        ([], "expected a JSON object"),
        ({"metadata-location": "file:///x/metadata/v1.metadata.json"}, "@ body.name"),
        ({"name": "t"}, "@ body.metadata-location"),
        ({"name": "t", "metadata-location": ""}, "@ body.metadata-location"),
    ]
    for body, field in cases:
        response = httpx.post(register, json=body)
        assert response.status_code == 400, (body, response.text)
        assert response.json()["error"]["type"] == "BadRequestException"
        assert field in response.json()["error"]["message"]


def test_a_nul_character_is_a_client_error_on_every_backend(rest, server):  # found by tests/drills (fuzzing)
    """PostgreSQL's text columns cannot hold U+0000: a name or lookup carrying one is the request's
    fault (400 there), never a 500; the embedded SQLite may find nothing (404). A JSON body carrying
    one is a 400 on both (``api/common.parse_json``, issue 30): nothing stores what one backend cannot."""
    assert rest.create_namespace("ns").status_code == 200
    answers = [
        rest.http.get("/namespaces", params={"parent": "a\x00b"}),
        rest.http.get("/namespaces/a%00b"),
        rest.http.get("/namespaces/ns/tables/t%00"),
        rest.http.post("/namespaces", json={"namespace": ["nul\x00"]}),
    ]
    properties = rest.http.post("/namespaces/ns/properties", json={"updates": {"k": "v\x00"}})
    assert properties.status_code == 400 and "U+0000" in error(properties)["message"], properties.text
    for response in answers:
        assert response.status_code < 500, response.text
        if response.status_code >= 400:
            error(response)
    if server.backend == "postgres":
        assert [response.status_code for response in answers] == [400] * len(answers)
        assert "cannot store" in error(answers[0])["message"]
