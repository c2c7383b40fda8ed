"""The Grants API with the built-in allow-all authorizer: it keeps no grants, so it offers no
privileges, and reading or writing grants answers 501 as the permissions API's assignments do."""

from __future__ import annotations

API = "/management/v1"


def assert_501(response, type_: str = "NotImplemented") -> None:
    assert response.status_code == 501, response.text
    assert response.json()["error"]["type"] == type_


def test_nothing_is_grantable(http, warehouse):
    vocabulary = http.get(f"{API}/grants/grantable-privileges")
    levels = ("server", "project", "warehouse", "namespace", "table", "view", "generic-table")
    # every level present, each with an empty list: "nothing is grantable here", not "unknown level"
    assert vocabulary.status_code == 200 and vocabulary.json() == {"privileges": {level: [] for level in levels}}
    here = http.get(f"{API}/warehouse/{warehouse['id']}/grants/grantable-privileges")
    assert here.status_code == 200 and here.json() == {"privileges": []}


def test_reading_and_writing_grants_answer_501(http, warehouse):
    wh = f"{API}/warehouse/{warehouse['id']}"
    assert_501(http.get(f"{wh}/grants"))
    assert_501(http.get(f"{API}/server/grants"))
    grant = {"privilege": "select", "principal": {"user": "oidc~bob"}}
    assert_501(http.post(f"{wh}/grants", json={"writes": [grant]}))
    assert_501(http.get(f"{API}/grants", params={"principalUser": "oidc~bob"}), "GrantListingNotImplemented")


def test_a_missing_warehouse_is_still_404(http):
    assert http.get(f"{API}/warehouse/00000000-0000-4000-8000-000000000000/grants").status_code == 404
