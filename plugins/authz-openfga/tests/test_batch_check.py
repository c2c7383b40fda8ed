"""``POST /management/v1/action/batch-check`` of a ``lakekeeper serve`` with the ``openfga``
authorizer against the OpenFGA double (alice owns, bob has nothing, root is an instance admin;
see ``permissions_setup.py``)."""

from __future__ import annotations

import uuid

import pytest
from permissions_setup import SCHEMA, Caller

BATCH = "/management/v1/action/batch-check"


@pytest.fixture(scope="module")
def setup(permissions_world):
    server, catalog, alice, bob, _, root = permissions_world
    return server, catalog, alice, bob, root


def _batch(caller: Caller, checks: list[dict], **extra) -> list[dict]:
    response = caller.post(BATCH, json={"checks": checks, **extra})
    assert response.status_code == 200, response.text
    return response.json()["results"]


def test_every_kind_by_id_and_by_name_in_request_order(setup) -> None:
    _, catalog, alice, bob, _ = setup
    wh = catalog.warehouse_id
    checks = [
        {"id": "server", "operation": {"server": {"action": "create_project"}}},
        {"id": "project", "operation": {"project": {"action": "create_warehouse", "project-id": catalog.project_id}}},
        {"id": "warehouse", "operation": {"warehouse": {"action": "create_namespace", "warehouse-id": wh}}},
        {
            "id": "ns-id",
            "operation": {
                "namespace": {"action": "create_table", "warehouse-id": wh, "namespace-id": catalog.namespace_id}
            },
        },
        {
            "id": "ns-name",
            "operation": {"namespace": {"action": "list_tables", "warehouse-id": wh, "namespace": ["sales"]}},
        },
        {
            "id": "table-id",
            "operation": {"table": {"action": "read_data", "warehouse-id": wh, "table-id": catalog.table_id}},
        },
        {
            "id": "table-name",
            "operation": {
                "table": {"action": "write_data", "warehouse-id": wh, "namespace": ["sales"], "table": "orders"}
            },
        },
        {"operation": {"table": {"action": "drop", "warehouse-id": wh, "table-id": catalog.table_id}}},
    ]
    assert _batch(alice, checks) == [
        {"id": c["id"], "allowed": True} if "id" in c else {"allowed": True} for c in checks
    ]
    assert [r["allowed"] for r in _batch(bob, checks)] == [False] * len(checks)


def test_a_missing_object_is_denied_or_with_error_on_not_found_a_404(setup) -> None:
    _, catalog, alice, bob, _ = setup
    missing = {
        "operation": {
            "table": {
                "action": "read_data",
                "warehouse-id": catalog.warehouse_id,
                "namespace": ["sales"],
                "table": "nope",
            }
        }
    }
    real = {
        "operation": {
            "table": {"action": "read_data", "warehouse-id": catalog.warehouse_id, "table-id": catalog.table_id}
        }
    }
    assert _batch(alice, [missing, real]) == [{"allowed": False}, {"allowed": True}]
    refused = alice.post(BATCH, json={"checks": [missing, real], "error-on-not-found": True})
    assert refused.status_code == 404 and refused.json()["error"]["type"] == "NoSuchTableException"
    # bob may not see the real table: to him it does not exist either
    hidden = bob.post(BATCH, json={"checks": [real], "error-on-not-found": True})
    assert hidden.status_code == 404
    other_warehouse = {"operation": {"warehouse": {"action": "use", "warehouse-id": str(uuid.uuid4())}}}
    assert _batch(alice, [other_warehouse]) == [{"allowed": False}]


def test_checking_for_someone_else_needs_read_assignments(setup) -> None:
    _, catalog, alice, bob, _ = setup
    real = {"table": {"action": "read_data", "warehouse-id": catalog.warehouse_id, "table-id": catalog.table_id}}
    assert _batch(alice, [{"identity": {"user": bob.user_id}, "operation": real}]) == [{"allowed": False}]
    grant = {"type": "select", "user": bob.user_id}
    assert alice.grant(catalog.table, writes=[grant]).status_code == 204
    try:
        assert _batch(alice, [{"identity": {"user": bob.user_id}, "operation": real}]) == [{"allowed": True}]
        # bob may not ask about alice on the server: that needs read_assignments there
        on_server = {"server": {"action": "create_project"}}
        refused = bob.post(BATCH, json={"checks": [{"identity": {"user": alice.user_id}, "operation": on_server}]})
        assert refused.status_code == 403
        assert _batch(alice, [{"identity": {"user": bob.user_id}, "operation": on_server}]) == [{"allowed": False}]
        assert _batch(bob, [{"identity": {"user": bob.user_id}, "operation": real}]) == [{"allowed": True}]
        assert _batch(alice, [{"identity": {"role": catalog.role_id}, "operation": real}]) == [{"allowed": False}]
    finally:
        alice.grant(catalog.table, deletes=[grant])


def test_a_thousand_table_checks_answer_in_order_and_more_are_refused(setup) -> None:
    _, catalog, alice, bob, _ = setup
    prefix = f"/catalog/v1/{catalog.warehouse_id}/namespaces/sales/tables"
    names = ["a_one", "a_two"]
    for name in names:
        assert alice.post(prefix, json={"name": name, "schema": SCHEMA}).status_code == 200
    ops = [
        {
            "id": str(i),
            "operation": {
                "table": {
                    "action": "read_data",
                    "warehouse-id": catalog.warehouse_id,
                    "namespace": ["sales"],
                    "table": (names + ["none"])[i % 3],
                }
            },
        }
        for i in range(1000)
    ]
    results = _batch(alice, ops)
    assert [r["id"] for r in results] == [str(i) for i in range(1000)]
    assert [r["allowed"] for r in results] == [i % 3 != 2 for i in range(1000)]
    too_many = alice.post(BATCH, json={"checks": ops + ops[:1]})
    assert too_many.status_code == 400 and too_many.json()["error"]["type"] == "TooManyChecks"


def test_unknown_actions_and_kinds_are_a_400(setup) -> None:
    _, catalog, alice, _, _ = setup
    for operation in (
        {"table": {"action": "fly", "warehouse-id": catalog.warehouse_id, "table-id": catalog.table_id}},
        {"galaxy": {"action": "use"}},
        {},
    ):
        response = alice.post(BATCH, json={"checks": [{"operation": operation}]})
        assert response.status_code == 400, response.text


def test_each_object_answers_its_actions_at_its_own_path(setup) -> None:
    _, catalog, alice, bob, _ = setup
    wh = catalog.warehouse_id
    paths = {"/server/actions": "create_project", "/project/actions": "create_warehouse",
             f"/warehouse/{wh}/actions": "update_storage",
             f"/warehouse/{wh}/namespace/{catalog.namespace_id}/actions": "create_generic_table",
             f"/warehouse/{wh}/table/{catalog.table_id}/actions": "write_data",
             f"/role/{catalog.role_id}/actions": "grant_assignee"}
    for path, action in paths.items():
        response = alice.get(f"/management/v1{path}")
        assert response.status_code == 200, (path, response.text)
        assert action in response.json()["allowed-actions"], path
    assert bob.get(f"/management/v1/warehouse/{wh}/table/{catalog.table_id}/actions").status_code == 404
    other = alice.get(f"/management/v1/warehouse/{uuid.uuid4()}/namespace/{catalog.namespace_id}/actions")
    assert other.status_code == 404
    about_bob = alice.get(f"/management/v1/warehouse/{wh}/table/{catalog.table_id}/actions",
                          params={"principalUser": bob.user_id})
    assert about_bob.status_code == 200 and about_bob.json() == {"allowed-actions": []}


def test_asking_about_someone_else_does_not_reveal_what_the_caller_cannot_see(setup) -> None:
    """bob sees nothing of alice's. Asking "may alice read sales.orders" must answer him exactly as
    for a table that does not exist; a 403 only for the real one would tell him it is there."""
    _, catalog, alice, bob, _ = setup
    wh = catalog.warehouse_id

    def about_alice(table: str) -> dict:
        operation = {"table": {"action": "read_data", "warehouse-id": wh, "namespace": ["sales"], "table": table}}
        return {"identity": {"user": alice.user_id}, "operation": operation}

    for extra in ({}, {"error-on-not-found": True}):
        real = bob.post(BATCH, json={"checks": [about_alice("orders")], **extra})
        missing = bob.post(BATCH, json={"checks": [about_alice("no_such_table")], **extra})
        assert real.status_code == missing.status_code == (404 if extra else 200), (real.text, missing.text)
        if extra:
            assert real.json()["error"]["type"] == missing.json()["error"]["type"] == "NoSuchTableException"
        else:
            assert real.json() == missing.json() == {"results": [{"allowed": False}]}


def test_many_names_of_one_namespace_are_found_in_any_case_and_only_as_their_kind(setup) -> None:
    """Names of one namespace are looked up together; each answer is still the named object's: a
    table asked about as a view, a dropped table and a missing name are denied, case is ignored."""
    _, catalog, alice, bob, _ = setup
    wh = catalog.warehouse_id
    prefix = f"/catalog/v1/{wh}/namespaces/sales/tables"
    for name in ("c_kept", "c_granted", "c_dropped"):
        assert alice.post(prefix, json={"name": name, "schema": SCHEMA}).status_code == 200
    assert alice.request("DELETE", f"{prefix}/c_dropped").status_code == 204
    granted = alice.get(f"{prefix}/c_granted").json()["metadata"]["table-uuid"]
    grant = {"type": "select", "user": bob.user_id}
    assert alice.grant(f"/warehouse/{wh}/table/{granted}", writes=[grant]).status_code == 204

    def check(kind: str, name: str) -> dict:
        return {"operation": {kind: {"action": "get_metadata", "warehouse-id": wh, "namespace": ["sales"], kind: name}}}

    asked = [("table", "c_kept"), ("table", "C_KEPT"), ("view", "c_kept"), ("table", "c_dropped"),
             ("table", "c_missing"), ("table", "c_granted"), ("table", "C_Granted")]
    try:
        checks = [check(kind, name) for kind, name in asked]
        assert [r["allowed"] for r in _batch(alice, checks)] == [True, True, False, False, False, True, True]
        assert [r["allowed"] for r in _batch(bob, checks)] == [False, False, False, False, False, True, True]
    finally:
        alice.grant(f"/warehouse/{wh}/table/{granted}", deletes=[grant])
