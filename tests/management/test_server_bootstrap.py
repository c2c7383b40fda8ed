"""Bootstrap with its optional fields, and ``GET /info`` following the system-identity settings.

One pristine authenticated server per backend; its authorizer is the test-only
``test-server-roles`` (tests/management/plugins), which remembers whom bootstrap made the
server's admin or operator.
"""

from __future__ import annotations

import httpx

from lakekeeper_testing.oidc import OidcIssuer

MGMT = "/management/v1"


def client_as(server, idp: OidcIssuer, subject: str, claims: dict | None = None) -> httpx.Client:
    client = httpx.Client(base_url=server.url, timeout=30)
    client.event_hooks["request"] = [
        lambda request: request.headers.__setitem__("Authorization", f"Bearer {idp.mint(subject, claims)}")
    ]
    return client


def test_bootstrap_records_the_user_and_makes_them_operator_and_info_follows_settings(make_server, idp):
    server = make_server(
        {
            "LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri,
            "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper",
            "LAKEKEEPER__AUTHZ_BACKEND": "test-server-roles",
            "LAKEKEEPER__ENABLE_AWS_SYSTEM_CREDENTIALS": "true",
            "LAKEKEEPER__ENABLE_GCP_SYSTEM_CREDENTIALS": "true",
        },
        bootstrap=False,
    )
    # the token says "Alice Token" / a client id; what the bootstrap body says wins
    alice = client_as(server, idp, "alice", {"name": "Alice Token", "email": "token@example.com"})
    bob = client_as(server, idp, "bob")
    with alice, bob:
        info = alice.get(f"{MGMT}/info").json()
        assert info["bootstrapped"] is False
        assert info["authz-backend"] == "test-server-roles"
        assert info["aws-system-identities-enabled"] is True
        assert info["azure-system-identities-enabled"] is False
        assert info["gcp-system-identities-enabled"] is True

        bad_type = alice.post(f"{MGMT}/bootstrap", json={"accept-terms-of-use": True, "user-type": "robot"})
        assert bad_type.status_code == 400
        assert "user-type" in bad_type.json()["error"]["message"]
        assert alice.get(f"{MGMT}/info").json()["bootstrapped"] is False

        done = alice.post(
            f"{MGMT}/bootstrap",
            json={
                "accept-terms-of-use": True,
                "is-operator": True,
                "user-name": "Alice Operator",
                "user-email": "alice@example.com",
                "user-type": "application",
            },
        )
        assert done.status_code == 204, done.text
        assert alice.get(f"{MGMT}/info").json()["bootstrapped"] is True

        me = alice.get(f"{MGMT}/whoami").json()
        assert me["id"] == "oidc~alice"
        assert (me["name"], me["email"], me["user-type"]) == ("Alice Operator", "alice@example.com", "application")
        assert me["last-updated-with"] == "update-endpoint"

        # the authorizer was told: alice is the operator (server and project rights), bob nothing
        assert alice.post(f"{MGMT}/project", json={"project-name": "ops"}).status_code == 201
        assert alice.get(f"{MGMT}/project").json()["project-name"] == "Default Project"
        assert bob.post(f"{MGMT}/project", json={"project-name": "nope"}).status_code == 403

        again = bob.post(f"{MGMT}/bootstrap", json={"accept-terms-of-use": True})
        assert again.status_code == 400
        assert again.json()["error"]["type"] == "CatalogAlreadyBootstrapped"
