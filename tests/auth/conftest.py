"""Authenticated servers for the auth tests: two in-process OIDC issuers, a fake TokenReview API.

The issuers (``lakekeeper_testing.oidc.OidcIssuer``) are real HTTP servers with RSA keys
that the ``lakekeeper serve`` subprocess discovers and fetches JWKS from, exactly as it would
from Keycloak. No Kubernetes cluster can run here, so ``FakeTokenReview`` stands in for the
API server's ``POST /apis/authentication.k8s.io/v1/tokenreviews``.
"""

from __future__ import annotations

import json
import threading
from http.server import ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from lakekeeper_testing.http_double import JsonHandler
from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.server import IDLE_POLLING, CatalogServer
from lakekeeper_testing.services import free_port

AUDIENCE = "lakekeeper"
MAX_ROLE_DEPTH = 3


@pytest.fixture(scope="session")
def idp_one():
    with OidcIssuer("one", audience=AUDIENCE, clients={"spark": "spark-secret", "etl": "etl-secret"}) as idp:
        yield idp


@pytest.fixture(scope="session")
def idp_two():
    with OidcIssuer("two", audience=AUDIENCE) as idp:
        yield idp


def two_provider_env(idp_one: OidcIssuer, idp_two: OidcIssuer) -> dict[str, str]:
    """Primary provider ``oidc`` plus an extra provider ``corp`` that identifies users by ``sub``."""
    return {
        "LAKEKEEPER__OPENID_PROVIDER_URI": idp_one.uri,
        "LAKEKEEPER__OPENID_AUDIENCE": AUDIENCE,
        "LAKEKEEPER__OPENID_PROVIDERS__CORP__URI": idp_two.uri,
        "LAKEKEEPER__OPENID_PROVIDERS__CORP__AUDIENCE": AUDIENCE,
        "LAKEKEEPER__OPENID_PROVIDERS__CORP__SUBJECT_CLAIMS": "sub",
        "LAKEKEEPER__ROLE__MAX_NESTING_DEPTH": str(MAX_ROLE_DEPTH),
        "LAKEKEEPER__INSTANCE_ADMINS": "oidc~root",
    }


@pytest.fixture(scope="session")
def auth_env(idp_one, idp_two) -> dict[str, str]:
    return two_provider_env(idp_one, idp_two)


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def auth_server(request, idp_one, idp_two, lakekeeper_server_factory):
    """A server that requires tokens from either issuer, once per database backend."""
    env = two_provider_env(idp_one, idp_two) | IDLE_POLLING  # no auth test waits for a task
    srv = lakekeeper_server_factory(env, backend=request.param, bootstrap_token=idp_one.mint("root"))
    yield srv
    srv.close()


class Caller:
    """An httpx client that sends a fresh token of one identity with every request."""

    def __init__(self, server: CatalogServer, idp: OidcIssuer, subject: str, claims: dict | None = None):
        self.idp, self.subject, self.claims = idp, subject, claims or {}
        self.client = httpx.Client(base_url=server.url, timeout=30)
        self.client.event_hooks["request"] = [self._sign]

    def _sign(self, request: httpx.Request) -> None:
        request.headers["Authorization"] = f"Bearer {self.idp.mint(self.subject, self.claims)}"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@pytest.fixture
def as_user(auth_server, idp_one):
    """``as_user("alice", {"name": ...})``: a client authenticated as ``oidc~<subject>``."""
    clients: list[Caller] = []

    def make(subject: str, claims: dict | None = None, idp: OidcIssuer | None = None) -> Caller:
        caller = Caller(auth_server, idp or idp_one, subject, claims)
        clients.append(caller)
        return caller

    yield make
    for caller in clients:
        caller.client.close()


# ---------------------------------------------------------------- Kubernetes TokenReview (fake)


class FakeTokenReview:
    """A FAKE Kubernetes API server (no cluster can run on this machine): it answers
    ``POST /apis/authentication.k8s.io/v1/tokenreviews`` for the tokens it was told about;
    everything else is unauthenticated.

    It insists on the reviewing server's own service-account token, like the real API server.
    """

    def __init__(self, reviewer_token: str) -> None:
        self.reviewer_token = reviewer_token
        self.port = free_port()
        self.tokens: dict[str, dict[str, Any]] = {}
        self.reviews: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def add(self, token: str, *, username: str, uid: str, audiences: list[str]) -> None:
        self.tokens[token] = {"username": username, "uid": uid, "audiences": audiences}

    def review(self, body: dict[str, Any]) -> dict[str, Any]:
        self.reviews.append(body)
        spec = body.get("spec", {})
        known = self.tokens.get(spec.get("token"))
        status: dict[str, Any] = {"authenticated": False, "error": "invalid bearer token"}
        wanted = spec.get("audiences") or []
        if known and (not wanted or set(wanted) & set(known["audiences"])):
            status = {
                "authenticated": True,
                "user": {"username": known["username"], "uid": known["uid"], "groups": ["system:serviceaccounts"]},
                "audiences": [a for a in known["audiences"] if not wanted or a in wanted],
            }
        elif known:
            status = {"authenticated": False, "error": "token audiences do not match"}
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status}

    def __enter__(self) -> FakeTokenReview:
        fake = self

        class Handler(JsonHandler):

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path != "/apis/authentication.k8s.io/v1/tokenreviews":
                    status, answer = 404, {"kind": "Status", "code": 404}
                elif self.headers.get("Authorization") != f"Bearer {fake.reviewer_token}":
                    status, answer = 401, {"kind": "Status", "code": 401}
                else:
                    status, answer = 201, fake.review(body)
                self.send_json(status, answer)

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@pytest.fixture
def token_review(tmp_path):
    """A fake TokenReview API plus the file holding the reviewing server's own token."""
    token_file = tmp_path / "service-account-token"
    token_file.write_text("reviewer-token\n")
    with FakeTokenReview("reviewer-token") as api:
        api.token_file = str(token_file)
        yield api
