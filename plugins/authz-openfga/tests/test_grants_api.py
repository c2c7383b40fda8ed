"""Lakekeeper's Grants API (``/management/v1/.../grants``) of a ``lakekeeper serve`` with the
``openfga`` authorizer against the OpenFGA double: alice owns the catalog, bob and carol start with
nothing (see ``permissions_setup.py``). Grants made here are the permissions API's assignments, so
they show up in normal requests."""

from __future__ import annotations

import json
import time

import pytest
from permissions_setup import PERMS, Caller

API = "/management/v1"
CATEGORIES = {"metadata", "read", "write", "create", "security", "administration"}


@pytest.fixture(scope="module")
def setup(permissions_world):
    server, catalog, alice, bob, carol, root = permissions_world
    _SERVER[:] = [server]
    return catalog, alice, bob, carol, root


_SERVER: list = []  # the module's server, for the CloudEvents its log holds


def _table(catalog) -> str:
    return f"{API}/warehouse/{catalog.warehouse_id}/table/{catalog.table_id}"


def _load_table(caller: Caller, catalog) -> int:
    return caller.get(f"/catalog/v1/{catalog.warehouse_id}/namespaces/sales/tables/orders").status_code


def _apply(caller: Caller, path: str, writes=(), deletes=()):
    return caller.post(f"{path}/grants", json={"writes": list(writes), "deletes": list(deletes)})


def _held(listing) -> list[dict]:
    """A grant listing's grants as apply entries (privilege and principal), checking the rest of each."""
    assert listing.status_code == 200, listing.text
    body = listing.json()
    assert body["next-page-token"] is None  # these listings are short: one page
    for grant in body["grants"]:
        assert grant["recognized"] is True and grant["created-at"] is None and "type" in grant["resource"]
    return [{"privilege": g["privilege"], "principal": g["principal"]} for g in body["grants"]]


def _entry(privilege: str, caller: Caller) -> dict:
    return {"privilege": privilege, "principal": {"user": caller.user_id}}


def test_the_vocabulary_names_every_level_with_categories(setup) -> None:
    _, _, bob, _, _ = setup
    response = bob.get(f"{API}/grants/grantable-privileges")
    assert response.status_code == 200, response.text
    by_level = response.json()["privileges"]  # Lakekeeper's shape: keyed by resource type
    assert set(by_level) == {"server", "project", "warehouse", "namespace", "table", "view", "generic-table"}
    for privileges in by_level.values():
        for p in privileges:
            assert set(p) == {"name", "display-name", "description", "category"}
            assert p["category"] in CATEGORIES and p["description"] and p["display-name"]
    assert {p["name"] for p in by_level["server"]} == {"admin", "operator"}
    assert {"select", "modify", "ownership", "describe"} <= {p["name"] for p in by_level["table"]}
    select = next(p for p in by_level["table"] if p["name"] == "select")
    assert select["category"] == "read" and select["display-name"] == "select"


def test_a_grant_gives_access_and_its_revocation_takes_it_away(setup) -> None:
    catalog, alice, bob, _, _ = setup
    table = _table(catalog)
    assert _load_table(bob, catalog) in (403, 404)
    assert _apply(alice, table, writes=[_entry("select", bob)]).status_code == 204
    assert _load_table(bob, catalog) == 200
    listed = alice.get(f"{table}/grants")
    assert listed.status_code == 200, listed.text
    assert {"privilege": "select", "principal": {"user": bob.user_id}} in _held(listed)
    # the same grant, seen through the permissions API
    assignments = alice.get(f"{PERMS}/warehouse/{catalog.warehouse_id}/table/{catalog.table_id}/assignments")
    assert {"type": "select", "user": bob.user_id} in assignments.json()["assignments"]

    assert _apply(alice, table, deletes=[_entry("select", bob)]).status_code == 204
    assert _load_table(bob, catalog) in (403, 404)
    assert _entry("select", bob) not in _held(alice.get(f"{table}/grants"))


def test_applying_is_idempotent_and_a_role_can_be_granted(setup) -> None:
    catalog, alice, bob, _, _ = setup
    namespace = f"{API}/warehouse/{catalog.warehouse_id}/namespace/{catalog.namespace_id}"
    role_entry = {"privilege": "describe", "principal": {"role": catalog.role_id}}
    for _ in range(2):
        assert (
            _apply(alice, namespace, writes=[_entry("describe", bob), _entry("describe", bob), role_entry]).status_code
            == 204
        )
    grants = _held(alice.get(f"{namespace}/grants"))
    assert grants.count(_entry("describe", bob)) == 1 and role_entry in grants
    only_role = _held(alice.get(f"{namespace}/grants", params={"principalRole": catalog.role_id}))
    assert only_role == [role_entry]
    # revoking what nobody holds is no error
    assert (
        _apply(alice, namespace, deletes=[_entry("modify", bob), _entry("describe", bob), role_entry]).status_code
        == 204
    )
    assert _held(alice.get(f"{namespace}/grants", params={"principalUser": bob.user_id})) == []


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
    assert _entry("select", bob) not in _held(alice.get(f"{table}/grants"))
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
        assert own.status_code == 200 and _held(own) == [_entry("select", bob)]
        # what he may grant: nothing; asking on alice's behalf needs read permission on grants
        mine = bob.get(f"{table}/grants/grantable-privileges")
        assert mine.status_code == 200
        assert mine.json()["privileges"] and not any(p["allowed"] for p in mine.json()["privileges"])
        assert (
            bob.get(f"{table}/grants/grantable-privileges", params={"principalUser": alice.user_id}).status_code == 403
        )
        owner = alice.get(f"{table}/grants/grantable-privileges").json()["privileges"]
        assert owner and all(set(p) == {"privilege", "allowed"} and p["allowed"] for p in owner)
        # each entry nests the very descriptor the vocabulary publishes for the level (Lakekeeper's shape)
        table_vocabulary = alice.get(f"{API}/grants/grantable-privileges").json()["privileges"]["table"]
        assert [p["privilege"] for p in owner] == table_vocabulary
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
    assert {"privilege": "admin", "principal": {"user": alice.user_id}} in _held(server)
    assert bob.get(f"{API}/server/grants").status_code == 403
    assert _held(bob.get(f"{API}/server/grants", params={"principalUser": bob.user_id})) == []
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
        assert _held(as_role) == [role_entry]
    finally:
        _apply(alice, table, deletes=[role_entry])
        alice.request("DELETE", f"{API}/role/{catalog.role_id}/members/user/{carol.user_id}")


def test_a_resources_grants_come_in_pages_that_together_hold_each_once(setup) -> None:
    catalog, alice, bob, carol, _ = setup
    table = _table(catalog)
    granted = [_entry(p, who) for p in ("select", "describe", "modify") for who in (bob, carol)]
    assert _apply(alice, table, writes=granted).status_code == 204
    try:
        everything = alice.get(f"{table}/grants").json()
        assert everything["next-page-token"] is None
        seen, token, pages = [], None, 0
        while True:
            params = {"pageSize": 2, **({"pageToken": token} if token else {})}
            page = alice.get(f"{table}/grants", params=params)
            assert page.status_code == 200, page.text
            body = page.json()
            assert len(body["grants"]) <= 2
            seen += body["grants"]
            pages += 1
            token = body["next-page-token"]
            if token is None:
                break
        assert pages == -(-len(everything["grants"]) // 2)
        assert len(seen) == len(everything["grants"])
        assert sorted(map(str, seen)) == sorted(map(str, everything["grants"]))
        table_resource = {"type": "table", "warehouse-id": catalog.warehouse_id, "table-id": catalog.table_id}
        assert all(grant["resource"] == table_resource for grant in seen)
        # narrowed to one principal, pages hold only that principal's grants
        first = alice.get(f"{table}/grants", params={"principalUser": carol.user_id, "pageSize": 1}).json()
        assert len(first["grants"]) == 1 and first["next-page-token"] is not None
        rest = alice.get(f"{table}/grants", params={"principalUser": carol.user_id, "pageSize": 10,
                                                    "pageToken": first["next-page-token"]}).json()
        assert {g["privilege"] for g in first["grants"] + rest["grants"]} == {"select", "describe", "modify"}
        assert rest["next-page-token"] is None
        bad = alice.get(f"{table}/grants", params={"pageToken": "not-a-token"})
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "InvalidPageToken"
    finally:
        _apply(alice, table, deletes=granted)


def _grant_events(after: int) -> list[dict]:
    """The grant CloudEvents the server logged after its log was ``after`` characters long."""
    found = []
    for line in _SERVER[0].log_path.read_text(errors="replace")[after:].splitlines():
        try:
            message = json.loads(line).get("message", "")
        except ValueError:
            continue
        if message.startswith("cloudevent "):
            event = json.loads(message.removeprefix("cloudevent "))
            if event["type"] in ("createGrant", "revokeGrant"):
                found.append(event)
    return found


def _wait_for_events(after: int, count: int) -> list[dict]:
    """The events after ``after`` once ``count`` have been logged (the log sink writes after the request)."""
    deadline = time.monotonic() + 10
    while len(found := _grant_events(after)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_each_grant_that_changes_is_an_audit_event_and_a_repeat_is_none(setup) -> None:
    """Both APIs announce every grant they create or revoke, one CloudEvent each (who, what, where,
    by whom); writing a grant that is already held, or revoking one nobody holds, announces nothing."""
    catalog, alice, bob, carol, _ = setup
    table = _table(catalog)
    start = len(_SERVER[0].log_path.read_text(errors="replace"))
    assert _apply(alice, table, writes=[_entry("select", bob), _entry("describe", carol)]).status_code == 204
    created = _wait_for_events(start, 2)
    assert sorted((e["type"], e["data"]["privilege"], json.dumps(e["data"]["principal"])) for e in created) == [
        ("createGrant", "describe", json.dumps({"user": carol.user_id})),
        ("createGrant", "select", json.dumps({"user": bob.user_id})),
    ]
    resource = {"type": "table", "warehouse-id": catalog.warehouse_id, "table-id": catalog.table_id}
    for event in created:
        assert event["data"]["resource"] == resource
        assert event["warehouse-id"] == catalog.warehouse_id and event["resource-id"] == catalog.table_id
        assert alice.user_id in event["actor"] and event["num-events"] == 2

    middle = len(_SERVER[0].log_path.read_text(errors="replace"))
    # the same grant again, and a revocation of what nobody holds: nothing changes, nothing is announced;
    # the permissions API's revocation of bob's select is announced like the Grants API's
    assert _apply(alice, table, writes=[_entry("select", bob)], deletes=[_entry("modify", carol)]).status_code == 204
    revoke = alice.grant(f"/warehouse/{catalog.warehouse_id}/table/{catalog.table_id}",
                         deletes=[{"type": "select", "user": bob.user_id}])
    assert revoke.status_code == 204, revoke.text
    assert _apply(alice, table, deletes=[_entry("describe", carol)]).status_code == 204
    later = _wait_for_events(middle, 2)
    time.sleep(0.3)  # a stray event for the repeated grant would be logged by now
    assert len(_grant_events(middle)) == 2
    assert [(e["type"], e["data"]["privilege"]) for e in later] == [("revokeGrant", "select"),
                                                                      ("revokeGrant", "describe")]

    server_start = len(_SERVER[0].log_path.read_text(errors="replace"))
    project = f"{API}/project"
    assert _apply(alice, project, writes=[_entry("describe", bob)]).status_code == 204
    try:
        (on_project,) = _wait_for_events(server_start, 1)
        assert on_project["data"]["resource"] == {"type": "project", "project-id": catalog.project_id}
        assert "warehouse-id" not in on_project and on_project["resource-type"] == "project"
    finally:
        _apply(alice, project, deletes=[_entry("describe", bob)])
