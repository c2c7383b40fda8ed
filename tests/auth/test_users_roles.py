"""Users and roles of the Management API (issue #5, data only — enforcement is the authorizer's).

Runs on an authenticated server (SQLite and PostgreSQL) so self-registration and implicit
provisioning see real tokens.
"""

from __future__ import annotations

import uuid

import httpx


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# ---------------------------------------------------------------- users


def test_first_config_call_registers_the_user_once(as_user):
    subject = unique("alice")
    alice = as_user(subject, {"given_name": "Alice", "family_name": "Liddell", "email": "alice@example.com"})
    assert alice.get("/management/v1/whoami").status_code == 404  # not registered yet

    alice.get("/catalog/v1/config", params={"warehouse": "does-not-matter"})
    first = alice.get("/management/v1/whoami").json()
    assert first["id"] == f"oidc~{subject}"
    assert first["name"] == "Alice Liddell"
    assert first["email"] == "alice@example.com"
    assert first["last-updated-with"] == "config-call-creation"

    alice.get("/catalog/v1/config", params={"warehouse": "does-not-matter"})
    assert alice.get("/management/v1/whoami").json() == first


def test_self_registration_from_the_token(as_user):
    subject = unique("app")
    app = as_user(subject, {"client_id": "etl"})  # a client-credentials token: no human name
    created = app.post("/management/v1/user", json={})
    assert created.status_code == 201, created.text
    user = created.json()
    assert user["id"] == f"oidc~{subject}"
    assert user["name"] == f"Nameless App with ID oidc~{subject}"
    assert user["user-type"] == "application"
    assert user["last-updated-with"] == "create-endpoint"

    again = app.post("/management/v1/user", json={})
    assert again.status_code == 409
    assert again.json()["error"]["type"] == "UserAlreadyExists"

    updated = app.post("/management/v1/user", json={"update-if-exists": True, "name": "ETL job"})
    assert updated.status_code == 200
    assert updated.json()["name"] == "ETL job"


def test_provisioning_someone_else_needs_name_and_type(as_user):
    admin = as_user("root")
    user_id = f"corp~{unique('zed')}"
    response = admin.post("/management/v1/user", json={"id": user_id, "name": "Zed", "user-type": "human"})
    assert response.status_code == 201
    assert response.json()["email"] is None

    missing_name = admin.post("/management/v1/user", json={"id": f"corp~{unique('x')}", "user-type": "human"})
    assert missing_name.status_code == 400
    assert missing_name.json()["error"]["type"] == "MissingUserName"
    missing_type = admin.post("/management/v1/user", json={"id": f"corp~{unique('x')}", "name": "X"})
    assert missing_type.json()["error"]["type"] == "MissingUserType"
    bad_id = admin.post("/management/v1/user", json={"id": "no-idp-prefix", "name": "X", "user-type": "human"})
    assert bad_id.status_code == 400
    assert bad_id.json()["error"]["type"] == "InvalidUserId"
    bad_type = admin.post("/management/v1/user", json={"id": f"corp~{unique('x')}", "name": "X", "user-type": "robot"})
    assert bad_type.status_code == 400


def test_malformed_bodies_name_the_field(as_user):
    admin = as_user("root")
    response = admin.post("/management/v1/user", json={"update-if-exists": "yes"})
    assert response.status_code == 400
    assert "update-if-exists" in response.json()["error"]["message"]
    response = admin.post("/management/v1/role", json={"description": "no name"})
    assert response.status_code == 400
    assert "name" in response.json()["error"]["message"]
    response = admin.put("/management/v1/user/oidc~someone", json={"name": "N"})
    assert response.status_code == 400
    assert "user-type" in response.json()["error"]["message"]


def test_list_users_with_name_filter_and_pages(as_user):
    admin = as_user("root")
    tag = uuid.uuid4().hex[:8]
    ids = []
    for i in range(3):
        user_id = f"corp~{tag}-{i}"
        ids.append(user_id)
        admin.post("/management/v1/user", json={"id": user_id, "name": f"Pager {tag} {i}", "user-type": "human"})

    first = admin.get("/management/v1/user", params={"name": f"pager {tag}", "pageSize": 2}).json()
    assert [u["id"] for u in first["users"]] == ids[:2]
    assert first["next-page-token"]
    second = admin.get(
        "/management/v1/user", params={"name": f"pager {tag}", "pageSize": 2, "pageToken": first["next-page-token"]}
    ).json()
    assert [u["id"] for u in second["users"]] == ids[2:]
    assert second["next-page-token"] is None

    bad = admin.get("/management/v1/user", params={"pageToken": "garbage!"})
    assert bad.status_code == 400


def test_search_users(as_user):
    admin = as_user("root")
    tag = uuid.uuid4().hex[:8]
    for name in (f"Findme {tag} Zeta", f"Findme {tag}", f"Other {tag}"):
        admin.post(
            "/management/v1/user", json={"id": f"corp~{uuid.uuid4().hex[:8]}", "name": name, "user-type": "human"}
        )
    found = admin.post("/management/v1/search/user", json={"search": f"findme {tag}"}).json()["users"]
    assert [u["name"] for u in found] == [f"Findme {tag}", f"Findme {tag} Zeta"]
    assert set(found[0]) == {"id", "name", "user-type", "email"}


def test_replace_and_delete_a_user(as_user):
    subject = unique("dora")
    dora = as_user(subject, {"name": "Dora"})
    dora.get("/catalog/v1/config", params={"warehouse": "x"})
    admin = as_user("root")
    user_id = f"oidc~{subject}"

    response = admin.put(
        f"/management/v1/user/{user_id}", json={"name": "Dora the Explorer", "user-type": "human", "email": "d@x.org"}
    )
    assert response.status_code == 200
    user = admin.get(f"/management/v1/user/{user_id}").json()
    assert (user["name"], user["email"], user["last-updated-with"]) == (
        "Dora the Explorer", "d@x.org", "update-endpoint"
    )
    assert user["updated-at"] is not None

    nobody = admin.put("/management/v1/user/oidc~nobody-here", json={"name": "N", "user-type": "human"})
    assert nobody.status_code == 404
    assert admin.delete(f"/management/v1/user/{user_id}").status_code == 204
    assert admin.get(f"/management/v1/user/{user_id}").status_code == 404
    assert admin.delete(f"/management/v1/user/{user_id}").status_code == 404

    # the same identity comes back on its next config call
    dora.get("/catalog/v1/config", params={"warehouse": "x"})
    assert dora.get("/management/v1/whoami").json()["name"] == "Dora"


def test_whoami_without_authentication_is_401(http):
    """On a server without identity providers every caller is anonymous."""
    response = http.get("/management/v1/whoami")
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "GetMyUserWithoutToken"


# ---------------------------------------------------------------- roles


def create_role(client, name: str, **extra) -> dict:
    response = client.post("/management/v1/role", json={"name": name, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def test_role_crud(as_user):
    admin = as_user("root")
    name = unique("Analysts")
    role = create_role(admin, name, description="read things")
    assert role["ident"] == f"lakekeeper~{role['id']}"
    assert (role["provider-id"], role["source-id"]) == ("lakekeeper", role["id"])
    assert role["project-id"] == "00000000-0000-0000-0000-000000000000"
    assert admin.get(f"/management/v1/role/{role['id']}").json() == role

    duplicate = admin.post("/management/v1/role", json={"name": name.upper()})
    assert duplicate.status_code == 409
    assert duplicate.json()["error"]["type"] == "RoleNameAlreadyExists"

    updated = admin.post(f"/management/v1/role/{role['id']}", json={"name": name + "-renamed"}).json()
    assert updated["name"] == name + "-renamed" and updated["description"] is None
    rebound = admin.put(
        f"/management/v1/role/{role['id']}/source-system", json={"provider-id": "ldap", "source-id": "cn=analysts"}
    ).json()
    assert rebound["ident"] == "ldap~cn=analysts"

    listed = admin.get("/management/v1/role", params={"roleIds": role["id"]}).json()["roles"]
    assert [r["id"] for r in listed] == [role["id"]]
    by_source = admin.get("/management/v1/role", params={"sourceIds": "cn=analysts", "providerIds": "ldap"}).json()
    assert [r["id"] for r in by_source["roles"]] == [role["id"]]
    found = admin.post("/management/v1/search/role", json={"search": name}).json()["roles"]
    assert role["id"] in [r["id"] for r in found]
    metadata = admin.get(f"/management/v1/role/{role['id']}/metadata").json()
    assert metadata["name"] == name + "-renamed" and "description" not in metadata

    assert admin.delete(f"/management/v1/role/{role['id']}").status_code == 204
    missing = admin.get(f"/management/v1/role/{role['id']}")
    assert missing.status_code == 404
    assert missing.json()["error"]["type"] == "RoleNotFoundInProject"


def test_role_identifier_rules(as_user):
    admin = as_user("root")
    reserved = admin.post("/management/v1/role", json={"name": unique("r"), "provider-id": "system", "source-id": "x"})
    assert reserved.json()["error"]["type"] == "RoleProviderIdReserved"
    half = admin.post("/management/v1/role", json={"name": unique("r"), "provider-id": "ldap"})
    assert half.json()["error"]["type"] == "InvalidRoleIdentifier"
    create_role(admin, unique("r"), **{"provider-id": "ldap", "source-id": "cn=same"})
    taken = admin.post("/management/v1/role", json={"name": unique("r"), "provider-id": "ldap", "source-id": "cn=same"})
    assert taken.status_code == 409
    assert taken.json()["error"]["type"] == "RoleSourceIdConflict"
    empty = admin.post("/management/v1/role", json={"name": ""})
    assert empty.json()["error"]["type"] == "EmptyRoleName"
    assert admin.get("/management/v1/role/not-a-uuid").status_code == 400


def test_roles_belong_to_a_project(as_user):
    admin = as_user("root")
    project_id = admin.post("/management/v1/project", json={"project-name": unique("p")}).json()["project-id"]
    role = create_role(admin, unique("scoped"))
    other = admin.get(f"/management/v1/role/{role['id']}", headers={"x-project-id": project_id})
    assert other.status_code == 404
    # the same name is free in another project
    response = admin.post("/management/v1/role", json={"name": role["name"]}, headers={"x-project-id": project_id})
    assert response.status_code == 201
    assert response.json()["project-id"] == project_id


def test_nested_membership_and_transitive_reads(as_user):
    admin = as_user("root")
    member_subject = unique("member")
    member = as_user(member_subject)
    member.post("/management/v1/user", json={})
    member_id = f"oidc~{member_subject}"

    top, mid, leaf = (create_role(admin, unique(n)) for n in ("top", "mid", "leaf"))
    added = admin.post(
        f"/management/v1/role/{top['id']}/members", json={"members": [{"type": "role", "id": mid["id"]}]}
    )
    assert added.status_code == 200
    assert added.json() == {"members": [{"type": "role", "id": mid["id"]}]}
    admin.post(
        f"/management/v1/role/{mid['id']}/members",
        json={"members": [{"type": "role", "id": leaf["id"]}, {"type": "user", "id": member_id}]},
    )
    admin.post(f"/management/v1/role/{leaf['id']}/members", json={"members": [{"type": "user", "id": member_id}]})

    direct = admin.get(f"/management/v1/role/{mid['id']}/members").json()["members"]
    assert {(m["type"], m["id"]) for m in direct} == {("role", leaf["id"]), ("user", member_id)}
    user_entry = next(m for m in direct if m["type"] == "user")
    assert user_entry["user-type"] == "application" and user_entry["name"].startswith("Nameless App")
    only_roles = admin.get(f"/management/v1/role/{mid['id']}/members", params={"type": "role"}).json()["members"]
    assert [m["id"] for m in only_roles] == [leaf["id"]]
    assert only_roles[0]["ident"] == leaf["ident"]

    transitive = admin.get(f"/management/v1/role/{top['id']}/members/transitive").json()["members"]
    assert {(m["type"], m["id"]) for m in transitive} == {
        ("role", mid["id"]), ("role", leaf["id"]), ("user", member_id)
    }

    parents = admin.get(f"/management/v1/role/{leaf['id']}/member-of").json()["roles"]
    assert [r["id"] for r in parents] == [mid["id"]]
    ancestors = admin.get(f"/management/v1/role/{leaf['id']}/member-of/transitive").json()["roles"]
    assert [r["id"] for r in ancestors] == [top["id"], mid["id"]]

    mine = admin.get(f"/management/v1/user/{member_id}/roles").json()["roles"]
    assert {r["id"] for r in mine} == {mid["id"], leaf["id"]}
    all_mine = admin.get(f"/management/v1/user/{member_id}/roles/transitive").json()["roles"]
    assert {r["id"] for r in all_mine} == {top["id"], mid["id"], leaf["id"]}

    page = admin.get(f"/management/v1/user/{member_id}/roles/transitive", params={"pageSize": 2}).json()
    assert len(page["roles"]) == 2 and page["next-page-token"]
    rest = admin.get(
        f"/management/v1/user/{member_id}/roles/transitive",
        params={"pageSize": 2, "pageToken": page["next-page-token"]},
    ).json()
    assert len(rest["roles"]) == 1 and rest["next-page-token"] is None

    # removing is idempotent; deleting a role drops it from its parents
    url = f"/management/v1/role/{mid['id']}/members/user/{member_id}"
    assert admin.delete(url).status_code == 204
    assert admin.delete(url).status_code == 204
    assert admin.delete(f"/management/v1/role/{leaf['id']}").status_code == 204
    assert admin.get(f"/management/v1/role/{mid['id']}/members").json()["members"] == []


def test_membership_cycles_are_refused(as_user):
    admin = as_user("root")
    a, b, c = (create_role(admin, unique(n)) for n in ("a", "b", "c"))
    admin.post(f"/management/v1/role/{a['id']}/members", json={"members": [{"type": "role", "id": b["id"]}]})
    admin.post(f"/management/v1/role/{b['id']}/members", json={"members": [{"type": "role", "id": c["id"]}]})

    for parent, child in ((c, a), (b, a), (a, a)):
        response = admin.post(
            f"/management/v1/role/{parent['id']}/members", json={"members": [{"type": "role", "id": child["id"]}]}
        )
        assert response.status_code == 409, response.text
        assert response.json()["error"]["type"] == "RoleMembershipCycle"
    # re-adding an existing edge is fine
    again = admin.post(f"/management/v1/role/{a['id']}/members", json={"members": [{"type": "role", "id": b["id"]}]})
    assert again.status_code == 200


def test_a_refused_batch_changes_nothing(as_user):
    admin = as_user("root")
    admin.post("/management/v1/user", json={"update-if-exists": True})
    a, b = create_role(admin, unique("a")), create_role(admin, unique("b"))
    admin.post(f"/management/v1/role/{b['id']}/members", json={"members": [{"type": "role", "id": a["id"]}]})
    response = admin.post(
        f"/management/v1/role/{a['id']}/members",
        json={"members": [{"type": "user", "id": "oidc~root"}, {"type": "role", "id": b["id"]}]},
    )
    assert response.status_code == 409
    assert admin.get(f"/management/v1/role/{a['id']}/members").json()["members"] == []


def test_nesting_depth_is_limited(as_user):
    """The server under test sets LAKEKEEPER__ROLE__MAX_NESTING_DEPTH=3 (conftest)."""
    admin = as_user("root")
    chain = [create_role(admin, unique(f"level{i}")) for i in range(5)]
    for parent, child in zip(chain[:3], chain[1:4], strict=True):  # 3 edges: allowed
        response = admin.post(
            f"/management/v1/role/{parent['id']}/members", json={"members": [{"type": "role", "id": child["id"]}]}
        )
        assert response.status_code == 200
    response = admin.post(
        f"/management/v1/role/{chain[3]['id']}/members", json={"members": [{"type": "role", "id": chain[4]["id"]}]}
    )
    assert response.status_code == 409
    assert response.json()["error"]["type"] == "RoleMembershipDepthExceeded"
    assert "MAX_NESTING_DEPTH" in response.json()["error"]["message"]
    # extending above the top is refused too
    response = admin.post(
        f"/management/v1/role/{chain[4]['id']}/members", json={"members": [{"type": "role", "id": chain[0]["id"]}]}
    )
    assert response.json()["error"]["type"] == "RoleMembershipDepthExceeded"


def test_unknown_members_are_404(as_user):
    admin = as_user("root")
    role = create_role(admin, unique("r"))
    response = admin.post(
        f"/management/v1/role/{role['id']}/members", json={"members": [{"type": "user", "id": "oidc~never-seen"}]}
    )
    assert response.status_code == 404
    assert response.json()["error"]["type"] == "RoleAssignmentUserNotFound"
    response = admin.post(
        f"/management/v1/role/{role['id']}/members", json={"members": [{"type": "role", "id": str(uuid.uuid4())}]}
    )
    assert response.json()["error"]["type"] == "RoleNotFoundInProject"
    response = admin.post(f"/management/v1/role/{role['id']}/members", json={"members": [{"type": "group", "id": "x"}]})
    assert response.status_code == 400


def test_deleting_a_user_removes_their_assignments(as_user):
    admin = as_user("root")
    subject = unique("leaver")
    as_user(subject).post("/management/v1/user", json={})
    role = create_role(admin, unique("team"))
    admin.post(
        f"/management/v1/role/{role['id']}/members", json={"members": [{"type": "user", "id": f"oidc~{subject}"}]}
    )
    admin.delete(f"/management/v1/user/oidc~{subject}")
    assert admin.get(f"/management/v1/role/{role['id']}/members").json()["members"] == []


def test_anonymous_requests_are_refused_on_the_authenticated_server(auth_server):
    assert httpx.get(auth_server.url + "/management/v1/user").status_code == 401
    assert httpx.post(auth_server.url + "/management/v1/role", json={"name": "x"}).status_code == 401
