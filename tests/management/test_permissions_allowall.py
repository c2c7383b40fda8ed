"""The permissions API with the built-in allow-all authorizer: everything is allowed, no grants are
kept, so assignments and managed access answer 501 (the ErrorModel), like Lakekeeper's allow-all."""

from __future__ import annotations

import uuid

from lakekeeper_host.service.authz import ACTIONS

PERMS = "/management/v1/permissions"


def assert_not_implemented(response) -> None:
    assert response.status_code == 501, response.text
    error = response.json()["error"]
    assert error["code"] == 501 and error["type"] == "NotImplemented"
    assert "LAKEKEEPER__AUTHZ_BACKEND=openfga" in error["message"]


def test_info_names_the_allow_all_backend(http):
    assert http.get("/management/v1/info").json()["authz-backend"] == "allow-all"


def test_my_access_is_everything(http, warehouse):
    server = http.get(f"{PERMS}/server/access")
    assert server.status_code == 200
    assert server.json() == {"allowed-actions": list(ACTIONS["server"])}
    assert http.get(f"{PERMS}/project/access").json()["allowed-actions"] == list(ACTIONS["project"])
    access = http.get(f"{PERMS}/warehouse/{warehouse['id']}/access", params={"principalUser": "oidc~bob"})
    assert access.json()["allowed-actions"] == list(ACTIONS["warehouse"])


def test_assignments_and_managed_access_answer_501(http, warehouse):
    wh = f"{PERMS}/warehouse/{warehouse['id']}"
    assert_not_implemented(http.get(f"{wh}/assignments"))
    assert_not_implemented(http.post(f"{wh}/assignments", json={"writes": [{"type": "select", "user": "oidc~bob"}]}))
    assert_not_implemented(http.get(f"{PERMS}/server/assignments"))
    assert_not_implemented(http.get(wh))
    assert_not_implemented(http.post(f"{wh}/managed-access", json={"managed-access": True}))


def test_check_is_allowed_and_objects_must_exist(http, warehouse):
    body = {"operation": {"warehouse": {"action": "create_namespace", "warehouse-id": warehouse["id"]}}}
    assert http.post(f"{PERMS}/check", json=body).json() == {"allowed": True}
    missing = str(uuid.uuid4())
    body = {"operation": {"warehouse": {"action": "create_namespace", "warehouse-id": missing}}}
    gone = http.post(f"{PERMS}/check", json=body)
    assert gone.status_code == 404 and gone.json()["error"]["type"] == "WarehouseNotFound"
    assert http.get(f"{PERMS}/warehouse/{missing}/access").status_code == 404
    assert http.get(f"{PERMS}/namespace/{missing}/access").json()["error"]["type"] == "NoSuchNamespaceException"


def test_malformed_requests_are_400(http, warehouse):
    wh = f"{PERMS}/warehouse/{warehouse['id']}"
    unknown_action = {"operation": {"table": {"action": "fly", "table-id": str(uuid.uuid4())}}}
    refused = http.post(f"{PERMS}/check", json=unknown_action)
    assert refused.status_code == 400 and "'fly' is not an action on a table" in refused.json()["error"]["message"]
    both = http.post(f"{wh}/assignments", json={"writes": [{"type": "select", "user": "oidc~a", "role": "x"}]})
    assert both.status_code == 400 and both.json()["error"]["type"] == "InvalidPrincipal"
    assert http.post(f"{wh}/managed-access", json={"managed-access": "yes"}).status_code == 400
    assert http.get(f"{wh}/access", params={"principalUser": "oidc~a", "principalRole": "r"}).status_code == 400


def test_answers_match_the_served_openapi_document(http, warehouse):
    import jsonschema

    document = http.get("/api-docs/management/v1/openapi.json").json()

    def validate(path: str, method: str, answer: dict) -> None:
        schema = document["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]
        jsonschema.Draft202012Validator({**schema, "components": document["components"]}).validate(answer)

    base = "/management/v1/permissions"
    validate(f"{base}/warehouse/{{warehouse_id}}/access", "get",
             http.get(f"{PERMS}/warehouse/{warehouse['id']}/access").json())
    body = {"operation": {"server": {"action": "create_project"}}}
    validate(f"{base}/check", "post", http.post(f"{PERMS}/check", json=body).json())
    operation = document["paths"][f"{base}/warehouse/{{warehouse_id}}/assignments"]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/UpdateAssignmentsRequest"}
    assert set(operation["responses"]) >= {"204", "4XX"}
