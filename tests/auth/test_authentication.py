"""Authentication with two OpenID Connect issuers at once (issue #8).

Every request to an authenticated server needs a bearer token one of the configured issuers
signed; health and API docs stay open. Tokens come from ``OidcIssuer``, a real issuer over
HTTP in this process.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time

import httpx
import pytest

from lakekeeper_host.config import load_settings
from lakekeeper_host.server.security.authn import provider_configs
from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.server import CatalogServer
from tests.auth.conftest import FakeTokenReview
from tests.plugins.installed import plugin_env


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def provision(server: CatalogServer, token: str) -> dict:
    """First GET /config registers the caller; whoami then returns the user record."""
    httpx.get(server.url + "/catalog/v1/config", params={"warehouse": "none"}, headers=bearer(token))
    response = httpx.get(server.url + "/management/v1/whoami", headers=bearer(token))
    assert response.status_code == 200, response.text
    return response.json()


def assert_rejected(server: CatalogServer, token: str, *, mentions: str) -> dict:
    response = httpx.get(server.url + "/management/v1/info", headers=bearer(token))
    assert response.status_code == 401, response.text
    error = response.json()["error"]
    assert error["code"] == 401
    assert mentions in error["message"]
    assert token not in response.text  # never echo the token
    assert response.headers["www-authenticate"].startswith("Bearer")
    return error


def test_tokens_from_both_issuers_map_to_distinct_users(auth_server, idp_one, idp_two):
    one = provision(auth_server, idp_one.mint("alice", {"name": "Alice Liddell", "email": "alice@example.com"}))
    two = provision(auth_server, idp_two.mint("alice", {"oid": "ignored-by-corp", "preferred_username": "al"}))

    assert one["id"] == "oidc~alice"
    assert one["name"] == "Alice Liddell" and one["email"] == "alice@example.com"
    assert one["user-type"] == "human"
    assert one["last-updated-with"] == "config-call-creation"
    # the extra provider is configured with SUBJECT_CLAIMS=sub, so `oid` does not win
    assert two["id"] == "corp~alice"
    assert two["name"] == "al"


def test_subject_prefers_oid_by_default(auth_server, idp_one):
    user = provision(auth_server, idp_one.mint("sub-value", {"oid": "entra-object-id"}))
    assert user["id"] == "oidc~entra-object-id"


def test_missing_or_malformed_header_is_401_with_www_authenticate(auth_server):
    response = httpx.get(auth_server.url + "/management/v1/info")
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["error"]["type"] == "MissingAuthorizationHeader"

    for header in ("Basic dXNlcjpwYXNz", "Bearer", "Bearer not-a-jwt"):
        response = httpx.get(auth_server.url + "/catalog/v1/config", headers={"Authorization": header})
        assert response.status_code == 401, header
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_health_and_api_docs_stay_open(auth_server):
    assert httpx.get(auth_server.url + "/health").status_code == 200
    assert httpx.get(auth_server.url + "/swagger-ui").status_code == 200
    assert httpx.get(auth_server.url + "/api-docs/management/v1/openapi.json").status_code == 200


def test_the_trino_policy_document_asks_for_no_token_where_the_others_do(auth_server):
    """Trino sends no token to its policy endpoint (the key in the path is the credential), so the
    document of /trino/... must not tell clients to send one."""
    trino = httpx.get(auth_server.url + "/api-docs/trino-opa/v1/openapi.json").json()
    management = httpx.get(auth_server.url + "/api-docs/management/v1/openapi.json").json()
    assert management["security"] == [{"bearerAuth": []}]
    assert "security" not in trino and "securitySchemes" not in trino["components"]
    assert set(trino["paths"]) == {"/trino/{key}/allow", "/trino/{key}/batch"}


def test_unknown_issuer_is_rejected(auth_server):
    with OidcIssuer("stranger", audience="lakekeeper") as stranger:
        error = assert_rejected(auth_server, stranger.mint("mallory"), mentions="not trusted by this server")
    assert stranger.issuer in error["message"]


def test_wrong_audience_is_rejected(auth_server, idp_one):
    error = assert_rejected(auth_server, idp_one.mint("alice", {"aud": "some-other-api"}), mentions="audience")
    assert "LAKEKEEPER__OPENID_AUDIENCE" in error["message"]


def test_expired_token_is_rejected(auth_server, idp_one):
    assert_rejected(auth_server, idp_one.mint("alice", expires_in=-3600), mentions="expired")


def test_token_without_expiry_is_rejected(auth_server, idp_one):
    assert_rejected(auth_server, idp_one.mint("alice", {"exp": None}), mentions="'exp'")


def test_tampered_claims_fail_the_signature(auth_server, idp_one):
    header, payload, signature = idp_one.mint("alice").split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=="))
    claims["sub"] = "root"
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    assert_rejected(auth_server, f"{header}.{forged}.{signature}", mentions="signature does not verify")


def test_alg_none_is_rejected(auth_server, idp_one):
    assert_rejected(auth_server, idp_one.mint_unsigned("root"), mentions="'none' is not accepted")


def test_hs256_signed_with_the_public_key_is_rejected(auth_server, idp_one):
    assert_rejected(auth_server, idp_one.mint_hs256_with_public_key("root"), mentions="'HS256' is not accepted")


def test_token_from_a_key_the_issuer_never_published_is_rejected(auth_server, idp_one):
    rogue = OidcIssuer("one").key  # same realm name, unrelated key
    token = idp_one.mint("root", header={"kid": rogue.kid}, key=rogue)
    assert_rejected(auth_server, token, mentions="is not in the JWKS")


def test_opaque_tokens_are_rejected(auth_server):
    assert_rejected(auth_server, "2YotnFZFEjr1zCsicMWpAA", mentions="not a JWT")


def test_x_assume_role_must_name_an_existing_role(auth_server, idp_one):
    token = idp_one.mint("alice")
    response = httpx.get(
        auth_server.url + "/management/v1/info", headers={**bearer(token), "x-assume-role": "not-a-uuid"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "InvalidRoleIdError"
    response = httpx.get(
        auth_server.url + "/management/v1/info",
        headers={**bearer(token), "x-assume-role": "0191e2a4-0000-7000-8000-000000000000"},
    )
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "InvalidAssumeRoleId"

    role = httpx.post(
        auth_server.url + "/management/v1/role", json={"name": "assumable"}, headers=bearer(token)
    ).json()
    response = httpx.get(
        auth_server.url + "/management/v1/info", headers={**bearer(token), "x-assume-role": role["id"]}
    )
    assert response.status_code == 200


def test_instance_admin_flag_in_whoami(auth_server, idp_one):
    assert provision(auth_server, idp_one.mint("root"))["is-instance-admin"] is True
    assert provision(auth_server, idp_one.mint("not-root"))["is-instance-admin"] is False


# ---------------------------------------------------------------- key rotation, outages, startup


def test_key_rotation_is_picked_up_without_restart(lakekeeper_server_factory):
    with OidcIssuer("rotating") as idp, lakekeeper_server_factory({"LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri}) as srv:
        before = idp.mint("alice")
        assert httpx.get(srv.url + "/management/v1/info", headers=bearer(before)).status_code == 200

        idp.rotate()  # the old key is no longer published
        after = idp.mint("alice")
        assert httpx.get(srv.url + "/management/v1/info", headers=bearer(after)).status_code == 200
        # the retired key's tokens stop working once the new JWKS was fetched
        assert httpx.get(srv.url + "/management/v1/info", headers=bearer(before)).status_code == 401


@pytest.mark.slow  # own server processes or waits out timeouts
def test_identity_provider_outage_keeps_cached_keys_refuses_unknown_ones_and_recovers(lakekeeper_server_factory):
    with OidcIssuer("flaky") as idp, lakekeeper_server_factory({"LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri}) as srv:
        known = idp.mint("alice")
        assert httpx.get(srv.url + "/management/v1/info", headers=bearer(known)).status_code == 200

        idp.stop()
        # keys already cached keep working while the IdP is down
        assert httpx.get(srv.url + "/management/v1/info", headers=bearer(known)).status_code == 200
        idp.rotate()
        fresh = idp.mint("alice")
        response = httpx.get(srv.url + "/management/v1/info", headers=bearer(fresh))
        # an unknown key id cannot be verified while the JWKS is unreachable: 401, saying why
        assert response.status_code == 401, response.text
        error = response.json()["error"]
        assert error["type"] == "AuthenticationFailed"
        assert "not among the cached keys" in error["message"] and "cannot be fetched" in error["message"]
        assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]

        idp.start()
        deadline = time.monotonic() + 30  # the server retries after a short back-off
        status = None
        while time.monotonic() < deadline:
            status = httpx.get(srv.url + "/management/v1/info", headers=bearer(fresh)).status_code
            if status == 200:
                break
            time.sleep(0.2)
        assert status == 200


@pytest.mark.slow  # own server processes or waits out timeouts
def test_unreachable_required_provider_stops_startup(tmp_path):
    dead = OidcIssuer("dead")  # never started: connections are refused
    srv = CatalogServer({"LAKEKEEPER__OPENID_PROVIDER_URI": dead.uri})
    with pytest.raises(RuntimeError) as excinfo:
        srv.start(timeout=30)
    srv.close()
    assert "identity provider 'oidc'" in str(excinfo.value)
    assert dead.uri in str(excinfo.value)


@pytest.mark.slow  # own server processes or waits out timeouts
def test_optional_provider_may_be_down_at_startup(idp_one, lakekeeper_server_factory):
    late = OidcIssuer("late")
    env = {
        "LAKEKEEPER__OPENID_PROVIDER_URI": idp_one.uri,
        "LAKEKEEPER__OPENID_PROVIDERS__LATE__URI": late.uri,
        "LAKEKEEPER__OPENID_PROVIDERS__LATE__REQUIRE_CONNECTED_ON_STARTUP": "false",
    }
    with lakekeeper_server_factory(env) as srv:
        assert "REQUIRE_CONNECTED_ON_STARTUP=false" in srv.log_tail(200)
        token = late.mint("bob")
        response = httpx.get(srv.url + "/management/v1/info", headers=bearer(token))
        assert response.status_code == 503
        with late:  # the provider comes up: its tokens are accepted from then on
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                response = httpx.get(srv.url + "/management/v1/whoami", headers=bearer(token))
                if response.status_code != 503:
                    break
                time.sleep(0.2)
            # authenticated as late~bob (not registered yet, hence 404 rather than 401/503)
            assert response.status_code == 404
            assert "late~bob" in response.json()["error"]["message"]


def test_provider_ids_are_validated():
    srv = CatalogServer({"LAKEKEEPER__OPENID_PROVIDERS__KUBERNETES__URI": "http://127.0.0.1:9/x"})
    with pytest.raises(RuntimeError) as excinfo:
        srv.start(timeout=30)
    srv.close()
    assert "may not be 'oidc' or 'kubernetes'" in str(excinfo.value)


# ---------------------------------------------------------------- Kubernetes


@pytest.mark.slow  # own server processes or waits out timeouts
def test_kubernetes_service_account_tokens(token_review, lakekeeper_server_factory):
    """Service-account tokens the cluster's TokenReview API vouches for. A fake TokenReview
    endpoint stands in for the Kubernetes API server: no cluster can run in this environment."""
    api = token_review
    cluster = OidcIssuer("cluster", audience="lakekeeper")  # signs service-account JWTs, never served
    sa_token = cluster.mint("system:serviceaccount:etl:loader")
    wrong_aud = cluster.mint("system:serviceaccount:etl:other", {"aud": "vault"})
    api.add(sa_token, username="system:serviceaccount:etl:loader", uid="1b7d-uid", audiences=["lakekeeper"])
    api.add(wrong_aud, username="system:serviceaccount:etl:other", uid="2c8e-uid", audiences=["vault"])
    env = {
        "LAKEKEEPER__ENABLE_KUBERNETES_AUTHENTICATION": "true",
        "LAKEKEEPER__KUBERNETES_API_URL": api.url,
        "LAKEKEEPER__KUBERNETES_TOKEN_FILE": api.token_file,
        "LAKEKEEPER__KUBERNETES_AUTHENTICATION_AUDIENCE": "lakekeeper",
    }
    with lakekeeper_server_factory(env) as srv:
        user = provision(srv, sa_token)
        assert user["id"] == "kubernetes~1b7d-uid"
        assert user["name"] == "system:serviceaccount:etl:loader"
        assert user["user-type"] == "application"
        assert api.reviews[0]["spec"]["audiences"] == ["lakekeeper"]

        for token in (wrong_aud, cluster.mint("system:serviceaccount:etl:unknown")):
            response = httpx.get(srv.url + "/management/v1/info", headers=bearer(token))
            assert response.status_code == 401
            assert "TokenReview rejected the token" in response.json()["error"]["message"]

        legacy = cluster.mint("legacy", {"iss": "kubernetes/serviceaccount"})
        response = httpx.get(srv.url + "/management/v1/info", headers=bearer(legacy))
        assert response.status_code == 401
        assert "ACCEPT_LEGACY_SERVICEACCOUNT" in response.json()["error"]["message"]

    with lakekeeper_server_factory({**env, "LAKEKEEPER__KUBERNETES_AUTHENTICATION_SUBJECT_SOURCE": "username"}) as srv:
        assert provision(srv, sa_token)["id"] == "kubernetes~system:serviceaccount:etl:loader"


@pytest.mark.slow  # own server processes or waits out timeouts
def test_token_review_outage_is_503_and_recovers(token_review, lakekeeper_server_factory):
    """The (fake) Kubernetes API server goes away: tokens it has not vouched for yet get 503
    (retry later), not 401 or 500; once it is back they are accepted."""
    cluster = OidcIssuer("cluster")
    first, during = cluster.mint("system:serviceaccount:etl:a"), cluster.mint("system:serviceaccount:etl:b")
    for token, uid in ((first, "uid-a"), (during, "uid-b")):
        token_review.add(token, username=f"sa-{uid}", uid=uid, audiences=["https://kubernetes.default.svc"])
    env = {
        "LAKEKEEPER__ENABLE_KUBERNETES_AUTHENTICATION": "true",
        "LAKEKEEPER__KUBERNETES_API_URL": token_review.url,
        "LAKEKEEPER__KUBERNETES_TOKEN_FILE": token_review.token_file,
    }
    with lakekeeper_server_factory(env) as srv:
        assert provision(srv, first)["id"] == "kubernetes~uid-a"
        token_review.__exit__(None, None, None)  # the API server is down
        response = httpx.get(srv.url + "/management/v1/whoami", headers=bearer(during))
        assert response.status_code == 503, response.text
        assert "TokenReview at" in response.json()["error"]["message"]
        assert during not in response.text
        revived = FakeTokenReview(token_review.reviewer_token)
        revived.port, revived.tokens = token_review.port, token_review.tokens
        with revived:
            assert provision(srv, during)["id"] == "kubernetes~uid-b"


@pytest.mark.slow  # own server processes or waits out timeouts
def test_kubernetes_and_oidc_together(token_review, idp_one, lakekeeper_server_factory):
    cluster = OidcIssuer("cluster")
    sa_token = cluster.mint("system:serviceaccount:ns:app")
    token_review.add(sa_token, username="system:serviceaccount:ns:app", uid="uid-9", audiences=["https://kubernetes.default.svc"])
    env = {
        "LAKEKEEPER__OPENID_PROVIDER_URI": idp_one.uri,
        "LAKEKEEPER__ENABLE_KUBERNETES_AUTHENTICATION": "true",
        "LAKEKEEPER__KUBERNETES_API_URL": token_review.url,
        "LAKEKEEPER__KUBERNETES_TOKEN_FILE": token_review.token_file,
    }
    with lakekeeper_server_factory(env) as srv:
        assert provision(srv, sa_token)["id"] == "kubernetes~uid-9"
        assert provision(srv, idp_one.mint("carol"))["id"] == "oidc~carol"
        # a token the OIDC provider claims by issuer is never handed to Kubernetes
        reviews = len(token_review.reviews)
        expired = bearer(idp_one.mint("x", expires_in=-3600))
        assert httpx.get(srv.url + "/management/v1/info", headers=expired).status_code == 401
        assert len(token_review.reviews) == reviews


# ------------------------------------------- scope, extra issuers, nbf, JWKS refresh, x-assume-role

LEGACY_ISSUER = "https://login.legacy.example.com/realms/strict"
SCOPE = "lakekeeper"


@pytest.fixture(scope="module")
def strict_idp():
    with OidcIssuer("strict", audience="lakekeeper") as idp:
        yield idp


@pytest.fixture(scope="module")
def strict_server(strict_idp, tmp_path_factory, lakekeeper_server_factory):
    """One server for the cases below: configured with ONLY an extra provider ``corp`` (no
    ``OPENID_PROVIDER_URI``) that requires a scope and accepts an additional issuer, and
    authorizing through the test-only ``assumed-role-only`` authorizer (tests/plugins)."""
    env = {
        **plugin_env(tmp_path_factory.mktemp("authz-plugin"), assumed_role_authz="tests.plugins.assumed_role_authz"),
        "LAKEKEEPER__OPENID_PROVIDERS__CORP__URI": strict_idp.uri,
        "LAKEKEEPER__OPENID_PROVIDERS__CORP__AUDIENCE": "lakekeeper",
        "LAKEKEEPER__OPENID_PROVIDERS__CORP__SCOPE": SCOPE,
        "LAKEKEEPER__OPENID_PROVIDERS__CORP__ADDITIONAL_ISSUERS": LEGACY_ISSUER,
        "LAKEKEEPER__AUTHZ_BACKEND": "assumed-role-only",
    }
    with lakekeeper_server_factory(env) as srv:
        yield srv


def scoped(idp: OidcIssuer, subject: str = "alice", extra: dict | None = None, **kwargs) -> str:
    return idp.mint(subject, {"scope": f"openid {SCOPE}", **(extra or {})}, **kwargs)


def test_a_provider_without_a_primary_one_authenticates(strict_server, strict_idp):
    """Only OPENID_PROVIDERS__CORP__URI is set: that alone turns authentication on."""
    assert httpx.get(strict_server.url + "/management/v1/info").status_code == 401
    assert provision(strict_server, scoped(strict_idp))["id"] == "corp~alice"


def test_required_scope(strict_server, strict_idp):
    error = assert_rejected(strict_server, strict_idp.mint("alice"), mentions="lacks the required scope lakekeeper")
    assert "LAKEKEEPER__OPENID_PROVIDERS__CORP__SCOPE" in error["message"]
    assert_rejected(strict_server, strict_idp.mint("alice", {"scope": "openid profile"}), mentions="scope")
    for granted in ({"scope": "openid lakekeeper"}, {"scp": ["lakekeeper"]}):  # space list or array
        response = httpx.get(strict_server.url + "/management/v1/info", headers=bearer(strict_idp.mint("a", granted)))
        assert response.status_code == 200, (granted, response.text)


def test_additional_issuer_is_accepted(strict_server, strict_idp):
    token = scoped(strict_idp, "bob", {"iss": LEGACY_ISSUER})
    assert provision(strict_server, token)["id"] == "corp~bob"
    # an issuer that is neither discovered nor listed is still refused
    assert_rejected(strict_server, scoped(strict_idp, "bob", {"iss": LEGACY_ISSUER + "-other"}), mentions="not trusted")


def test_token_not_yet_valid_is_rejected_within_leeway_accepted(strict_server, strict_idp):
    now = int(time.time())
    assert_rejected(strict_server, scoped(strict_idp, extra={"nbf": now + 3600}), mentions="not valid before")
    # clocks drift: a token valid in 20 seconds is inside the 60 second leeway
    soon = scoped(strict_idp, extra={"nbf": now + 20})
    assert httpx.get(strict_server.url + "/management/v1/info", headers=bearer(soon)).status_code == 200


async def test_unknown_key_ids_refetch_the_jwks_at_most_once_per_window(strict_server, strict_idp):
    def jwks_fetches() -> int:
        return sum(1 for path in list(strict_idp.requests) if path.endswith("/certs"))

    before = jwks_fetches()
    rogue_tokens = []
    for n in range(20):  # each signed by a key the issuer never published, each with its own kid
        rogue = OidcIssuer(f"rogue{n}").key
        rogue_tokens.append(scoped(strict_idp, header={"kid": f"unknown-{n}-{rogue.kid}"}, key=rogue))
    async with httpx.AsyncClient(base_url=strict_server.url, timeout=30) as client:
        responses = await asyncio.gather(
            *(client.get("/management/v1/info", headers=bearer(t)) for t in rogue_tokens)
        )
        assert [r.status_code for r in responses] == [401] * 20
        assert all("is not in the JWKS" in r.json()["error"]["message"] for r in responses)
        # tokens signed with the published key keep working
        assert (await client.get("/management/v1/info", headers=bearer(scoped(strict_idp)))).status_code == 200
    assert jwks_fetches() - before <= 1


def test_the_authorizer_receives_the_assumed_role(strict_server, strict_idp):
    """The test-only ``assumed-role-only`` authorizer allows the demo warehouse only to an actor
    whose ``assumed_role`` is the role named ``catalog-user``."""
    token = scoped(strict_idp, "carol")
    roles = {}
    for name in ("catalog-user", "other"):
        created = httpx.post(strict_server.url + "/management/v1/role", json={"name": name}, headers=bearer(token))
        assert created.status_code == 201, created.text
        roles[name] = created.json()["id"]

    def config(assume: str | None) -> httpx.Response:
        headers = bearer(token) | ({"x-assume-role": assume} if assume else {})
        return httpx.get(strict_server.url + "/catalog/v1/config", params={"warehouse": "demo"}, headers=headers)

    for assume in (None, roles["other"]):  # a warehouse the caller may not see answers as missing
        denied = config(assume)
        assert denied.status_code == 404, denied.text
        assert denied.json()["error"]["type"] == "NoSuchWarehouseException"
    allowed = config(roles["catalog-user"])
    assert allowed.status_code == 200, allowed.text
    assert allowed.json()["defaults"]["prefix"]


def test_primary_provider_scope_and_additional_issuers_settings():
    """The primary provider's flat settings reach the same checks as OPENID_PROVIDERS__<ID>__*."""
    settings = load_settings({
        "LAKEKEEPER__OPENID_PROVIDER_URI": "https://idp.example.com/realms/main",
        "LAKEKEEPER__OPENID_SCOPE": "lakekeeper",
        "LAKEKEEPER__OPENID_ADDITIONAL_ISSUERS": "https://old.example.com,https://older.example.com",
    })
    ((idp_id, config, prefix),) = provider_configs(settings.auth)
    assert (idp_id, prefix) == ("oidc", "LAKEKEEPER__OPENID_")
    assert config.scope == "lakekeeper"
    assert config.additional_issuers == ("https://old.example.com", "https://older.example.com")
