"""The permissions API (``/management/v1/permissions/...``) of a ``lakekeeper serve`` with the
``openfga`` authorizer against the OpenFGA API double, with OIDC users from a local issuer:
alice bootstraps and owns, bob starts with nothing, root is an instance admin (see
``permissions_setup.py``)."""

from __future__ import annotations

import uuid

import pytest
from permissions_setup import PERMS


@pytest.fixture(scope="module")
def setup(permissions_world):
    server, catalog, alice, bob, _, root = permissions_world
    return server, catalog, alice, bob, root


def test_info_reports_the_openfga_backend(setup) -> None:
    server, _, alice, _, _ = setup
    assert alice.get("/management/v1/info").json()["authz-backend"] == "openfga"


def test_my_access_answers_what_the_tuples_allow(setup) -> None:
    _, catalog, alice, bob, _ = setup
    assert "create_project" in alice.actions("/server")  # bootstrap made alice the server's admin
    assert bob.actions("/server") == []
    mine = alice.actions(catalog.table)
    assert {"drop", "read_data", "write_data", "change_ownership"} <= set(mine)
    assert alice.actions(f"/table/{catalog.table_id}") == mine  # the older path without the warehouse
    hidden = bob.access(catalog.table)
    assert hidden.status_code == 404 and hidden.json()["error"]["type"] == "NoSuchTableException"
    assert bob.access(f"/namespace/{catalog.namespace_id}").status_code == 404
    wrong_warehouse = alice.access(f"/warehouse/{uuid.uuid4()}/table/{catalog.table_id}")
    assert wrong_warehouse.status_code == 404


def test_a_grant_takes_effect_at_once_and_a_revocation_too(setup) -> None:
    _, catalog, alice, bob, _ = setup
    grant = {"type": "select", "user": bob.user_id}
    assert alice.grant(catalog.table, writes=[grant]).status_code == 204
    try:
        actions = set(bob.actions(catalog.table))
        assert {"read_data", "get_metadata", "include_in_list"} <= actions
        assert not actions & {"write_data", "drop", "commit"}
        table = {"warehouse-id": catalog.warehouse_id, "table-id": catalog.table_id}
        assert bob.check({"table": {"action": "read_data", **table}}).json() == {"allowed": True}
        assert bob.check({"table": {"action": "write_data", **table}}).json() == {"allowed": False}
        by_name = {"warehouse-id": catalog.warehouse_id, "namespace": ["sales"], "table": "orders"}
        assert bob.check({"table": {"action": "read_data", **by_name}}).json() == {"allowed": True}
        # visibility flows up: bob now sees the namespace above his table, not its other rights
        assert bob.actions(f"/namespace/{catalog.namespace_id}") == ["get_metadata", "list_tables", "list_views",
                                                                      "list_generic_tables", "list_namespaces",
                                                                      "include_in_list"]
        listed = alice.get(f"{PERMS}{catalog.table}/assignments").json()["assignments"]
        assert {"type": "ownership", "user": alice.user_id} in listed and grant in listed
        only_select = alice.get(f"{PERMS}{catalog.table}/assignments", params={"relations": "select"}).json()
        assert only_select == {"assignments": [grant]}
    finally:
        assert alice.grant(catalog.table, deletes=[grant]).status_code == 204
    assert bob.access(catalog.table).status_code == 404


def test_who_may_see_but_not_grant_is_refused_with_403(setup) -> None:
    _, catalog, alice, bob, _ = setup
    grant = {"type": "select", "user": bob.user_id}
    delegate = {"type": "pass_grants", "user": bob.user_id}
    assert alice.grant(catalog.table, writes=[grant]).status_code == 204
    try:
        refused = bob.grant(catalog.table, writes=[{"type": "select", "user": "oidc~carol"}])
        assert refused.status_code == 403, refused.text
        assert refused.json()["error"]["type"] == "Forbidden"
        wrong = alice.grant(catalog.table, writes=[{"type": "create", "user": "oidc~carol"}])
        assert wrong.status_code == 400 and wrong.json()["error"]["type"] == "InvalidGrant"
        # asking about someone else needs read_assignments, which only who may grant has (Lakekeeper):
        # a reader has not; with pass_grants bob may hand on his select, so he may read the grants too
        assert bob.access(catalog.table, principalUser=alice.user_id).status_code == 403
        assert alice.grant(catalog.table, writes=[delegate]).status_code == 204
        assert bob.access(catalog.table, principalUser=alice.user_id).status_code == 200
        assert bob.access(f"/project/{catalog.project_id}", principalUser=alice.user_id).status_code == 403
    finally:
        alice.grant(catalog.table, deletes=[grant, delegate])
    hidden = bob.grant(catalog.table, writes=[{"type": "select", "user": bob.user_id}])
    assert hidden.status_code == 404  # may not see it: does not exist for bob


def test_roles_receive_grants_and_are_asked_about_by_id(setup) -> None:
    _, catalog, alice, bob, _ = setup
    role_grant = {"type": "select", "role": catalog.role_id}
    assert alice.grant(catalog.table, writes=[role_grant]).status_code == 204
    member = {"type": "assignee", "user": bob.user_id}
    assert alice.grant(f"/role/{catalog.role_id}", writes=[member]).status_code == 204
    try:
        role_actions = alice.actions(catalog.table, principalRole=catalog.role_id)
        assert "read_data" in role_actions and "write_data" not in role_actions
        on_behalf = alice.check({"table": {"action": "read_data", "table-id": catalog.table_id}},
                                identity={"role": catalog.role_id})
        assert on_behalf.json() == {"allowed": True}
        assert member in alice.get(f"{PERMS}/role/{catalog.role_id}/assignments").json()["assignments"]
        assert "assume" in bob.actions(f"/role/{catalog.role_id}")
        # bob acting as the role reads the table
        as_role = bob.get(f"{PERMS}{catalog.table}/access", headers={"x-assume-role": catalog.role_id})
        assert as_role.status_code == 200 and "read_data" in as_role.json()["allowed-actions"]
    finally:
        alice.grant(catalog.table, deletes=[role_grant])
        alice.grant(f"/role/{catalog.role_id}", deletes=[member])


def test_managed_access_on_a_warehouse_is_inherited_by_its_namespaces(setup) -> None:
    _, catalog, alice, bob, _ = setup
    warehouse, namespace = f"{PERMS}/warehouse/{catalog.warehouse_id}", f"{PERMS}/namespace/{catalog.namespace_id}"
    assert alice.get(warehouse).json() == {"managed-access": False}
    assert alice.post(f"{warehouse}/managed-access", json={"managed-access": True}).status_code == 200
    try:
        assert alice.get(f"{warehouse}/managed-access").json() == {"managed-access": True}
        assert alice.get(namespace).json() == {"managed-access": False, "managed-access-inherited": True}
        # alice owns the table, but under managed access only her project roles let her grant
        assert "grant_select" in alice.actions(catalog.table)
        assert bob.post(f"{warehouse}/managed-access", json={"managed-access": False}).status_code == 404
    finally:
        assert alice.post(f"{warehouse}/managed-access", json={"managed-access": False}).status_code == 200
    assert alice.get(namespace).json() == {"managed-access": False, "managed-access-inherited": False}
    assert alice.post(f"{PERMS}/table/{catalog.table_id}/managed-access",
                      json={"managed-access": True}).status_code in (404, 405)


def test_instance_admins_pass_the_control_plane_but_get_no_data_and_grant_nothing(setup) -> None:
    _, catalog, _, _, root = setup
    assert root.actions("/server") == [
        "create_project", "update_users", "delete_users", "list_users", "provision_users", "read_assignments",
        "grant_admin", "grant_operator", "list_all_projects"]
    on_table = set(root.actions(catalog.table))
    assert {"get_metadata", "drop", "read_assignments", "change_ownership"} <= on_table
    assert not on_table & {"read_data", "write_data"}
    table = {"table-id": catalog.table_id}
    assert root.check({"table": {"action": "read_data", **table}}).json() == {"allowed": False}
    assert root.check({"table": {"action": "drop", **table}}).json() == {"allowed": True}
    assert root.get(f"{PERMS}{catalog.table}/assignments").status_code == 200
    refused = root.grant(catalog.table, writes=[{"type": "select", "user": root.user_id}])
    assert refused.status_code == 403  # no grant by that right: the authorizer decides grants alone
