"""Lakekeeper's Grants API (``/management/v1/.../grants``) of a ``lakekeeper serve`` with the
``openfga`` authorizer against the OpenFGA double: alice owns the catalog, bob and carol start with
nothing (see ``permissions_setup.py``). Grants made here are the permissions API's assignments, so
they show up in normal requests."""

from __future__ import annotations

import pytest
from permissions_setup import PERMS, Caller

API = "/management/v1"
CATEGORIES = {"metadata", "read", "write", "create", "security", "administration"}


@pytest.fixture(scope="module")
def setup(permissions_world):
    _, catalog, alice, bob, carol, root = permissions_world
    return catalog, alice, bob, carol, root


def _table(catalog) -> str:
    return f"{API}/warehouse/{catalog.warehouse_id}/table/{catalog.table_id}"


def _load_table(caller: Caller, catalog) -> int:
    return caller.get(f"/catalog/v1/{catalog.warehouse_id}/namespaces/sales/tables/orders").status_code


def _apply(caller: Caller, path: str, writes=(), deletes=()):
    return caller.post(f"{path}/grants", json={"writes": list(writes), "deletes": list(deletes)})


def _entry(privilege: str, caller: Caller) -> dict:
    return {"privilege": privilege, "principal": {"user": caller.user_id}}


def test_the_vocabulary_names_every_level_with_categories(setup) -> None:
    _, _, bob, _, _ = setup
    response = bob.get(f"{API}/grants/grantable-privileges")
    assert response.status_code == 200, response.text
    privileges = response.json()["privileges"]
    by_level = {}
    for p in privileges:
        by_level.setdefault(p["resource-type"], set()).add(p["name"])
        assert p["category"] in CATEGORIES and p["description"] and p["display-name"]
    assert set(by_level) == {"server", "project", "warehouse", "namespace", "table", "view", "generic-table"}
    assert by_level["server"] == {"admin", "operator"}
    assert {"select", "modify", "ownership", "describe"} <= by_level["table"]
    select = next(p for p in privileges if p["resource-type"] == "table" and p["name"] == "select")
    assert select["category"] == "read" and select["display-name"] == "select"


def test_a_grant_gives_access_and_its_revocation_takes_it_away(setup) -> None:
    catalog, alice, bob, _, _ = setup
    table = _table(catalog)
    assert _load_table(bob, catalog) in (403, 404)
    assert _apply(alice, table, writes=[_entry("select", bob)]).status_code == 204
    assert _load_table(bob, catalog) == 200
    listed = alice.get(f"{table}/grants")
    assert listed.status_code == 200, listed.text
    assert {"privilege": "select", "principal": {"user": bob.user_id}} in listed.json()["grants"]
    # the same grant, seen through the permissions API
    assignments = alice.get(f"{PERMS}/warehouse/{catalog.warehouse_id}/table/{catalog.table_id}/assignments")
    assert {"type": "select", "user": bob.user_id} in assignments.json()["assignments"]

    assert _apply(alice, table, deletes=[_entry("select", bob)]).status_code == 204
    assert _load_table(bob, catalog) in (403, 404)
    assert _entry("select", bob) not in alice.get(f"{table}/grants").json()["grants"]


def test_applying_is_idempotent_and_a_role_can_be_granted(setup) -> None:
    catalog, alice, bob, _, _ = setup
    namespace = f"{API}/warehouse/{catalog.warehouse_id}/namespace/{catalog.namespace_id}"
    role_entry = {"privilege": "describe", "principal": {"role": catalog.role_id}}
    for _ in range(2):
        assert (
            _apply(alice, namespace, writes=[_entry("describe", bob), _entry("describe", bob), role_entry]).status_code
            == 204
        )
    grants = alice.get(f"{namespace}/grants").json()["grants"]
    assert grants.count(_entry("describe", bob)) == 1 and role_entry in grants
    only_role = alice.get(f"{namespace}/grants", params={"principalRole": catalog.role_id}).json()["grants"]
    assert only_role == [role_entry]
    # revoking what nobody holds is no error
    assert (
        _apply(alice, namespace, deletes=[_entry("modify", bob), _entry("describe", bob), role_entry]).status_code
        == 204
    )
    assert alice.get(f"{namespace}/grants", params={"principalUser": bob.user_id}).json()["grants"] == []


def test_bad_requests_are_400_and_change_nothing(setup) -> None:
    catalog, alice, bob, _, _ = setup
    table = _table(catalog)
    unknown = _apply(alice, table, writes=[_entry("select", bob), _entry("fly", bob)])
    assert unknown.status_code == 400 and unknown.json()["error"]["type"] == "InvalidGrantPrivilege"
    # create is a namespace privilege, not a table one
    assert _apply(alice, table, writes=[_entry("create", bob)]).status_code == 400
    too_many = [{"privilege": "select", "principal": {"user": f"oidc~user-{i}"}} for i in range(101)]
    response = _apply(alice, table, writes=too_many)
    assert response.status_code == 400 and "100" in response.json()["error"]["message"]
    assert _apply(alice, table, writes=too_many[:60], deletes=too_many[60:]).status_code == 400
    assert _apply(alice, table, writes=[{"privilege": "select", "principal": {}}]).status_code == 400
    assert _entry("select", bob) not in alice.get(f"{table}/grants").json()["grants"]
    assert _load_table(bob, catalog) in (403, 404)
    assert _apply(alice, table, writes=too_many[:100]).status_code == 204
    assert _apply(alice, table, deletes=too_many[:100]).status_code == 204


def test_granting_needs_the_authority_and_hidden_objects_are_404(setup) -> None:
    catalog, alice, bob, carol, _ = setup
    table = _table(catalog)
    # bob cannot see the table: 404 for every grants route, as for a table that does not exist
    assert _apply(bob, table, writes=[_entry("select", bob)]).status_code == 404
    assert _apply(bob, table, writes=[_entry("fly", bob)]).status_code == 404  # no oracle in a bad body
    assert bob.get(f"{table}/grants").status_code == 404
    assert bob.get(f"{table}/grants/grantable-privileges").status_code == 404
    missing = f"{API}/warehouse/{catalog.warehouse_id}/table/00000000-0000-4000-8000-000000000000"
    assert alice.get(f"{missing}/grants").status_code == 404

    assert _apply(alice, table, writes=[_entry("select", bob)]).status_code == 204
    try:
        # bob sees the table now, but may not hand anything on
        refused = _apply(bob, table, writes=[_entry("select", carol)])
        assert refused.status_code == 403, refused.text
        assert _load_table(carol, catalog) in (403, 404)
        # nor read who else holds what -- only his own grants
        assert bob.get(f"{table}/grants").status_code == 403
        assert bob.get(f"{table}/grants", params={"principalUser": alice.user_id}).status_code == 403
        own = bob.get(f"{table}/grants", params={"principalUser": bob.user_id})
        assert own.status_code == 200 and own.json()["grants"] == [_entry("select", bob)]
        # what he may grant: nothing; asking on alice's behalf needs read permission on grants
        mine = bob.get(f"{table}/grants/grantable-privileges")
        assert mine.status_code == 200
        assert mine.json()["privileges"] and not any(p["allowed"] for p in mine.json()["privileges"])
        assert (
            bob.get(f"{table}/grants/grantable-privileges", params={"principalUser": alice.user_id}).status_code == 403
        )
        owner = alice.get(f"{table}/grants/grantable-privileges").json()["privileges"]
        assert owner and all(p["allowed"] for p in owner)
        for_bob = alice.get(f"{table}/grants/grantable-privileges", params={"principalUser": bob.user_id})
        assert for_bob.status_code == 200 and not any(p["allowed"] for p in for_bob.json()["privileges"])

        # with manage_grants bob may hand on select, and carol gets the table
        assert _apply(alice, table, writes=[_entry("manage_grants", bob)]).status_code == 204
        assert _apply(bob, table, writes=[_entry("select", carol)]).status_code == 204
        assert _load_table(carol, catalog) == 200
        assert _apply(bob, table, deletes=[_entry("select", carol)]).status_code == 204
        assert _load_table(carol, catalog) in (403, 404)
    finally:
        _apply(alice, table, deletes=[_entry("select", bob), _entry("manage_grants", bob)])


def test_server_and_project_grants(setup) -> None:
    _, alice, bob, _, _ = setup
    project = alice.get(f"{API}/project/grants")
    assert project.status_code == 200, project.text
    assert bob.get(f"{API}/project/grants").status_code in (403, 404)
    server = alice.get(f"{API}/server/grants")
    assert server.status_code == 200
    assert {"privilege": "admin", "principal": {"user": alice.user_id}} in server.json()["grants"]
    assert bob.get(f"{API}/server/grants").status_code == 403
    assert bob.get(f"{API}/server/grants", params={"principalUser": bob.user_id}).json()["grants"] == []
    assert _apply(bob, f"{API}/server", writes=[_entry("admin", bob)]).status_code == 403


def test_listing_everything_one_principal_holds_is_501(setup) -> None:
    _, alice, bob, _, _ = setup
    response = alice.get(f"{API}/grants", params={"principalUser": bob.user_id})
    assert response.status_code == 501
    assert response.json()["error"]["type"] == "GrantListingNotImplemented"
    assert alice.get(f"{API}/grants").status_code == 400


def test_the_instance_admin_reads_grants_but_hands_out_nothing_without_a_grant(setup) -> None:
    catalog, _, bob, _, root = setup
    table = _table(catalog)
    assert root.get(f"{table}/grants").status_code == 200
    refused = _apply(root, table, writes=[_entry("select", bob)])
    assert refused.status_code == 403, refused.text
    assert _load_table(bob, catalog) in (403, 404)


def test_a_role_one_belongs_to_is_oneself_only_when_assumed(setup) -> None:
    catalog, alice, _, carol, _ = setup
    table = _table(catalog)
    role_entry = {"privilege": "select", "principal": {"role": catalog.role_id}}
    carol.get("/catalog/v1/config", params={"warehouse": catalog.warehouse_id})  # registers carol
    members = alice.post(
        f"{API}/role/{catalog.role_id}/members", json={"members": [{"type": "user", "id": carol.user_id}]}
    )
    assert members.status_code < 300, members.text
    assert _apply(alice, table, writes=[role_entry]).status_code == 204
    try:
        assert _load_table(carol, catalog) == 200
        narrowed = {"principalRole": catalog.role_id}
        assert carol.get(f"{table}/grants", params=narrowed).status_code == 403
        as_role = carol.get(f"{table}/grants", params=narrowed, headers={"x-assume-role": catalog.role_id})
        assert as_role.status_code == 200, as_role.text
        assert as_role.json()["grants"] == [role_entry]
    finally:
        _apply(alice, table, deletes=[role_entry])
        alice.request("DELETE", f"{API}/role/{catalog.role_id}/members/user/{carol.user_id}")
