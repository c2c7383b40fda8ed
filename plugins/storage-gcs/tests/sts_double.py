"""A local stand-in for Google's OAuth2 token endpoint and Security Token Service.

TEST DOUBLE, and why: neither ``oauth2.googleapis.com/token`` nor ``sts.googleapis.com/v1/token``
can run on this machine, and fake-gcs-server has no token endpoints at all. This double does what
the plugin relies on and checks what it sends:

* ``POST /token``: the JWT-bearer grant a service account key makes (RFC 7523). The assertion's
  RS256 signature is verified against the public half of a key registered with
  ``service_account_key``, and its ``iss``/``aud``/``scope`` are checked (``aud`` is Google's token
  endpoint, as google-auth sends it); the answer is an access token for that account.
* ``POST /v1/token``: the RFC 8693 token exchange with a Credential Access Boundary. It requires the
  exchange grant, access-token subject/requested types, a subject token this double issued to a
  service account, and an ``options`` JSON with an ``accessBoundary``; it records the request and
  answers with a new token.

``allows(token, action, bucket, name)`` answers what Google would decide for a downscoped token: the
roles of its boundary rules (``objectViewer``: get and list; ``objectCreator``: create;
``objectUser``: all four) and the three kinds of CEL clause the plugin writes
(``resource.name.startsWith``, ``api.getAttribute(objectListPrefix).startsWith``, joined by ``||``).
Any other expression fails the test: this is not a CEL interpreter, and a new kind of clause must be
checked by hand first. fake-gcs-server itself enforces nothing.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
import urllib.parse
from http.server import ThreadingHTTPServer
from typing import Any

from attrs import define, field
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from lakekeeper_testing.http_double import JsonHandler

JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"


@define
class Exchange:
    """One token exchange the double answered."""

    subject_token: str
    service_account: str
    boundary: dict[str, Any]
    issued_token: str
    form: dict[str, str]


@define
class StsDouble:
    lifetime_seconds: int = 3600
    exchanges: list[Exchange] = field(factory=list)
    # client_email -> public key PEM
    _public_keys: dict[str, bytes] = field(factory=dict)
    # access token -> client_email, for tokens issued by /token
    _source_tokens: dict[str, str] = field(factory=dict)
    # downscoped token -> its exchange
    _downscoped: dict[str, Exchange] = field(factory=dict)
    rejected: list[str] = field(factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(factory=threading.Lock)

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> StsDouble:
        double = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:  # noqa: N802 - the http.server API
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                status, body = double.handle(self.path, form)
                self.send_json(status, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def token_uri(self) -> str:
        return f"{self.url}/token"

    @property
    def sts_endpoint(self) -> str:
        return f"{self.url}/v1/token"

    # ---------------------------------------------------------------- keys

    def service_account_key(
        self, email: str = "lakekeeper@test-project.iam.gserviceaccount.com", *, register: bool = True
    ) -> dict[str, str]:
        """A fresh service account key file; ``register=False`` gives one this double does not know."""
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        if register:
            self._public_keys[email] = private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        return {
            "type": "service_account",
            "project_id": "test-project",
            "private_key_id": secrets.token_hex(20),
            "private_key": pem,
            "client_email": email,
            "client_id": "1234567890",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.token_uri,
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/{email}",
            "universe_domain": "googleapis.com",
        }

    def exchange_for(self, token: str) -> Exchange | None:
        """The exchange that issued a downscoped ``token``."""
        return self._downscoped.get(token)

    def allows(self, token: str, action: str, bucket: str, name: str = "") -> bool:
        """Whether Google would let ``token`` do ``action`` (get, list, create, delete) on an object.

        For ``list``, ``name`` is the listing's prefix.
        """
        exchange = self._downscoped.get(token)
        if exchange is None:
            return False
        for rule in exchange.boundary["accessBoundary"]["accessBoundaryRules"]:
            if rule["availableResource"] != f"//storage.googleapis.com/projects/_/buckets/{bucket}":
                continue
            roles = [permission.removeprefix("inRole:") for permission in rule["availablePermissions"]]
            if not any(action in ROLE_ACTIONS[role] for role in roles):
                continue
            if _condition_holds(rule["availabilityCondition"]["expression"], action, bucket, name):
                return True
        return False

    # ---------------------------------------------------------------- requests

    def handle(self, path: str, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            if path == "/token":
                return self._jwt_bearer(form)
            if path == "/v1/token":
                return self._token_exchange(form)
            return 404, {"error": "not_found"}

    def _reject(self, status: int, error: str, description: str) -> tuple[int, dict[str, Any]]:
        self.rejected.append(description)
        return status, {"error": error, "error_description": description}

    def _jwt_bearer(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        from google.auth import jwt

        if form.get("grant_type") != JWT_BEARER_GRANT:
            return self._reject(400, "unsupported_grant_type", f"grant_type {form.get('grant_type')!r}")
        assertion = form.get("assertion", "")
        try:
            claims = jwt.decode(assertion, verify=False)
            public_key = self._public_keys[claims["iss"]]
            # google-auth addresses the assertion to Google's token endpoint, whatever token_uri says
            claims = jwt.decode(assertion, certs=public_key, audience=GOOGLE_TOKEN_AUDIENCE)
        except (KeyError, ValueError) as exc:
            return self._reject(400, "invalid_grant", f"Invalid JWT Signature: {exc}")
        if "devstorage" not in claims.get("scope", ""):
            return self._reject(400, "invalid_scope", f"no storage scope in {claims.get('scope')!r}")
        token = "sa-" + secrets.token_urlsafe(16)
        self._source_tokens[token] = claims["iss"]
        return 200, {"access_token": token, "expires_in": self.lifetime_seconds, "token_type": "Bearer"}

    def _token_exchange(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        if form.get("grant_type") != TOKEN_EXCHANGE_GRANT:
            return self._reject(400, "unsupported_grant_type", f"grant_type {form.get('grant_type')!r}")
        for name in ("subject_token_type", "requested_token_type"):
            if form.get(name) != ACCESS_TOKEN_TYPE:
                return self._reject(400, "invalid_request", f"{name} {form.get(name)!r}")
        subject = form.get("subject_token", "")
        account = self._source_tokens.get(subject)
        if account is None:
            return self._reject(401, "invalid_grant", "subject_token was not issued to a service account")
        try:
            options = json.loads(form["options"])
            rules = options["accessBoundary"]["accessBoundaryRules"]
            assert rules and all("availableResource" in r and r["availablePermissions"] for r in rules)
        except (KeyError, ValueError, TypeError, AssertionError):
            return self._reject(400, "invalid_request", f"options is not a Credential Access Boundary: {form}")
        token = "downscoped-" + secrets.token_urlsafe(16)
        exchange = Exchange(subject, account, options, token, form)
        self.exchanges.append(exchange)
        self._downscoped[token] = exchange
        return 200, {
            "access_token": token,
            "issued_token_type": ACCESS_TOKEN_TYPE,
            "token_type": "Bearer",
            "expires_in": self.lifetime_seconds,
        }


ROLE_ACTIONS = {
    "roles/storage.objectViewer": {"get", "list"},
    "roles/storage.objectCreator": {"create"},
    "roles/storage.objectUser": {"get", "list", "create", "delete"},
}
_LITERAL = r"'((?:[^'\\]|\\.)*)'"
_RESOURCE_CLAUSE = re.compile(rf"^resource\.name\.startsWith\({_LITERAL}\)$")
_LIST_PREFIX_CLAUSE = re.compile(
    rf"^api\.getAttribute\('storage\.googleapis\.com/objectListPrefix', ''\)\.startsWith\({_LITERAL}\)$"
)


def _unescape(literal: str) -> str:
    return re.sub(r"\\(.)", r"\1", literal)


def _condition_holds(expression: str, action: str, bucket: str, name: str) -> bool:
    # a listing is a request on the bucket, with its prefix as an attribute; other calls name the object
    resource = f"projects/_/buckets/{bucket}" if action == "list" else f"projects/_/buckets/{bucket}/objects/{name}"
    list_prefix = name if action == "list" else ""
    for clause in expression.split(" || "):
        if match := _RESOURCE_CLAUSE.match(clause):
            if resource.startswith(_unescape(match.group(1))):
                return True
        elif match := _LIST_PREFIX_CLAUSE.match(clause):
            if list_prefix.startswith(_unescape(match.group(1))):
                return True
        else:
            raise AssertionError(f"the STS double cannot evaluate the clause {clause!r}")
    return False


def now_ms() -> int:
    return int(time.time() * 1000)
