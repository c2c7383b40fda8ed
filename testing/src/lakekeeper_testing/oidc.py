"""A small OpenID Connect issuer for tests: discovery, JWKS, client-credentials tokens, and a
browser sign-in (authorization code + PKCE) with RP-initiated logout.

It runs in the test process on a free 127.0.0.1 port (a thread), so a ``lakekeeper serve``
subprocess can discover it and fetch its keys like a real IdP. Tests mint tokens with any
claims (``mint``), hand out tokens to clients by the OAuth2 client-credentials grant (the flow
PyIceberg's ``credential`` uses), rotate the signing key (``rotate``), and take the issuer down
and up again (``stop`` / ``start`` keep the port) to simulate an outage. A browser signs in at
``authorization_endpoint``: a form asks for a user name (any name is accepted, no password), the
code it redirects with is redeemed once at the token endpoint against the PKCE verifier (S256).

    with OidcIssuer(audience="lakekeeper") as idp:
        token = idp.mint("alice", {"name": "Alice"})
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import html
import json
import secrets
import threading
import time
import urllib.parse
from http.server import ThreadingHTTPServer
from typing import Any

from joserfc import jws
from joserfc.jwk import RSAKey

from lakekeeper_testing.http_double import JsonHandler
from lakekeeper_testing.services import free_port


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class OidcIssuer:
    """An RS256 issuer at ``http://127.0.0.1:<port>/realms/<realm>``."""

    def __init__(
        self,
        realm: str = "test",
        *,
        audience: str | None = "lakekeeper",
        clients: dict[str, str] | None = None,
        token_lifetime: int = 300,
        port: int | None = None,
        password_grant: bool = False,
    ) -> None:
        self.realm = realm
        self.audience = audience
        self.clients = dict(clients or {})
        self.token_lifetime = token_lifetime
        self.port = port or free_port()
        # OAuth2's password grant for ANY user name and password (`lakekeeper-dev idp`: tokens for alice
        # and bob with one curl); off for tests, which check that unknown grants are refused
        self.password_grant = password_grant
        self.key = self._new_key()
        self.published: list[RSAKey] = [self.key]
        self.requests: list[str] = []  # paths served, for tests that care what was fetched
        self._codes: dict[str, dict[str, str]] = {}  # authorization code -> what it was issued for
        self.logouts: list[dict[str, str]] = []  # end-session requests seen
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._generation = 0

    # ------------------------------------------------------------ addresses

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}/realms/{self.realm}"

    uri = issuer  # what LAKEKEEPER__OPENID_PROVIDER_URI points at

    @property
    def token_endpoint(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/token"

    @property
    def authorization_endpoint(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/auth"

    @property
    def end_session_endpoint(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/logout"

    @property
    def jwks_uri(self) -> str:
        return f"{self.issuer}/protocol/openid-connect/certs"

    # ------------------------------------------------------------ keys

    def _new_key(self) -> RSAKey:
        self._generation = getattr(self, "_generation", 0) + 1
        kid = f"{self.realm}-{self._generation}-{int(time.time() * 1000) % 100000}"
        return RSAKey.generate_key(2048, parameters={"kid": kid, "alg": "RS256", "use": "sig"})

    def rotate(self, *, keep_previous: bool = False) -> RSAKey:
        """Sign with a fresh key from now on; the JWKS publishes it (and the old one if kept)."""
        self.key = self._new_key()
        self.published = [self.key, *self.published] if keep_previous else [self.key]
        return self.key

    def jwks(self) -> dict[str, Any]:
        return {"keys": [k.as_dict(private=False) for k in self.published]}

    # ------------------------------------------------------------ tokens

    def claims(self, subject: str, extra: dict[str, Any] | None = None, *, expires_in: int | None = None) -> dict:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": subject,
            "iat": now,
            "nbf": now,
            "exp": now + (self.token_lifetime if expires_in is None else expires_in),
        }
        if self.audience is not None:
            claims["aud"] = self.audience
        claims.update(extra or {})
        return {k: v for k, v in claims.items() if v is not None}

    def mint(
        self,
        subject: str = "alice",
        extra: dict[str, Any] | None = None,
        *,
        expires_in: int | None = None,
        key: RSAKey | None = None,
        header: dict[str, Any] | None = None,
    ) -> str:
        """An RS256 JWT; ``extra`` adds/overrides claims (a None value removes one)."""
        key = key or self.key
        protected = {"alg": "RS256", "typ": "JWT", "kid": key.kid, **(header or {})}
        payload = json.dumps(self.claims(subject, extra, expires_in=expires_in)).encode()
        return jws.serialize_compact(protected, payload, key)

    def mint_unsigned(self, subject: str = "alice", extra: dict[str, Any] | None = None) -> str:
        """``alg: none`` — must never be accepted."""
        header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": self.key.kid}).encode())
        payload = _b64(json.dumps(self.claims(subject, extra)).encode())
        return f"{header}.{payload}."

    def mint_hs256_with_public_key(self, subject: str = "alice", extra: dict[str, Any] | None = None) -> str:
        """The classic key-confusion attack: HMAC-signed with the issuer's *public* key as secret."""
        # signed by hand: joserfc itself refuses to use a public key as an HMAC secret
        secret = self.key.as_pem(private=False)
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": self.key.kid}).encode())
        payload = _b64(json.dumps(self.claims(subject, extra)).encode())
        signature = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        return f"{header}.{payload}.{_b64(signature)}"

    # ------------------------------------------------------------ HTTP server

    def start(self) -> OidcIssuer:
        if self._server is not None:
            return self
        issuer = self

        class Handler(JsonHandler):
            def _send_raw(self, status: int, content_type: str, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _answer(self, answer: tuple[int, str, str, dict[str, str]]) -> None:
                status, content_type, text, headers = answer
                self._send_raw(status, content_type, text.encode(), headers)

            def do_GET(self) -> None:  # noqa: N802
                parts = urllib.parse.urlsplit(self.path)
                path = parts.path
                query = {k: v[0] for k, v in urllib.parse.parse_qs(parts.query).items()}
                issuer.requests.append(path)
                base = f"/realms/{issuer.realm}"
                if path == f"{base}/.well-known/openid-configuration":
                    self.send_json(200, issuer.discovery())
                elif path == f"{base}/protocol/openid-connect/certs":
                    self.send_json(200, issuer.jwks())
                elif path == f"{base}/protocol/openid-connect/auth":
                    self._answer(issuer.authorize_page(query))
                elif path == f"{base}/protocol/openid-connect/logout":
                    self._answer(issuer.end_session(query))
                else:
                    self.send_json(404, {"error": "not_found"})

            def do_POST(self) -> None:  # noqa: N802
                path = urllib.parse.urlsplit(self.path).path
                issuer.requests.append(path)
                length = int(self.headers.get("Content-Length") or 0)
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                if path == f"/realms/{issuer.realm}/protocol/openid-connect/auth":
                    self._answer(issuer.authorize_submit({k: v[0] for k, v in form.items()}))
                    return
                if path != f"/realms/{issuer.realm}/protocol/openid-connect/token":
                    self.send_json(404, {"error": "not_found"})
                    return
                status, body = issuer.token_response(
                    {k: v[0] for k, v in form.items()}, self.headers.get("Authorization")
                )
                self.send_json(status, body)

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"oidc-{self.realm}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Go offline (connections are refused); ``start()`` comes back on the same port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    close = stop

    def __enter__(self) -> OidcIssuer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------ endpoints

    def discovery(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "jwks_uri": self.jwks_uri,
            "token_endpoint": self.token_endpoint,
            "authorization_endpoint": self.authorization_endpoint,
            "end_session_endpoint": self.end_session_endpoint,
            "grant_types_supported": ["client_credentials", "authorization_code",
                                      *(["password"] if self.password_grant else [])],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic", "none"],
            "code_challenge_methods_supported": ["S256"],
            "id_token_signing_alg_values_supported": ["RS256"],
            "response_types_supported": ["code", "token"],
            "subject_types_supported": ["public"],
        }

    # ------------------------------------------------------------ browser sign-in

    def authorize_page(self, query: dict[str, str]) -> tuple[int, str, str, dict[str, str]]:
        """``GET`` authorization endpoint: a sign-in form carrying the request on (code flow + PKCE only)."""
        if query.get("response_type") != "code" or not query.get("redirect_uri") or not query.get("client_id"):
            return 400, "text/plain", "invalid_request: response_type=code, client_id and redirect_uri are required", {}
        if query.get("code_challenge_method") != "S256" or not query.get("code_challenge"):
            return 400, "text/plain", "invalid_request: PKCE with S256 is required", {}
        hidden = "".join(
            f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(v)}">' for k, v in query.items()
        )
        page = (
            "<!doctype html><title>Test IdP sign-in</title><h1>Test IdP</h1>"
            f'<form method="post" action="{html.escape(self.authorization_endpoint)}">{hidden}'
            '<label>User <input name="username" id="username" required></label>'
            '<button type="submit" id="kc-login">Sign in</button></form>'
        )
        return 200, "text/html; charset=utf-8", page, {}

    def authorize_submit(self, form: dict[str, str]) -> tuple[int, str, str, dict[str, str]]:
        """``POST`` from the sign-in form: redirect back with a one-time code bound to the PKCE challenge."""
        code = secrets.token_urlsafe(24)
        self._codes[code] = {
            "subject": form.get("username") or "alice",
            "client_id": form.get("client_id", ""),
            "redirect_uri": form.get("redirect_uri", ""),
            "code_challenge": form.get("code_challenge", ""),
            "scope": form.get("scope", ""),
        }
        params = {"code": code, **({"state": form["state"]} if form.get("state") else {})}
        separator = "&" if "?" in form.get("redirect_uri", "") else "?"
        location = form.get("redirect_uri", "") + separator + urllib.parse.urlencode(params)
        return 302, "text/plain", "", {"Location": location}

    def end_session(self, query: dict[str, str]) -> tuple[int, str, str, dict[str, str]]:
        """RP-initiated logout: record it and go back to ``post_logout_redirect_uri``."""
        self.logouts.append(query)
        target = query.get("post_logout_redirect_uri")
        if target:
            return 302, "text/plain", "", {"Location": target}
        return 200, "text/plain", "signed out", {}

    def _code_grant(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        issued = self._codes.pop(form.get("code", ""), None)  # a code is redeemed at most once
        if issued is None:
            return 400, {"error": "invalid_grant", "error_description": "unknown or used code"}
        if form.get("redirect_uri") != issued["redirect_uri"] or form.get("client_id") != issued["client_id"]:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri or client_id mismatch"}
        verifier = form.get("code_verifier") or ""
        challenge = _b64(hashlib.sha256(verifier.encode()).digest())
        if not verifier or not hmac.compare_digest(challenge, issued["code_challenge"]):
            return 400, {"error": "invalid_grant", "error_description": "PKCE verification failed"}
        subject = issued["subject"]
        profile = {"name": subject.title(), "preferred_username": subject, "email": f"{subject}@example.com"}
        access = self.mint(subject, {**profile, "azp": issued["client_id"], "scope": issued["scope"]})
        id_token = self.mint(subject, {**profile, "aud": issued["client_id"]})
        return 200, {
            "access_token": access,
            "id_token": id_token,
            "token_type": "Bearer",
            "expires_in": self.token_lifetime,
            "scope": issued["scope"],
        }

    def _password_grant(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """RFC 6749 §4.3 without a password check: whoever names a user gets that user's tokens."""
        subject = (form.get("username") or "").strip()
        if not subject:
            return 400, {"error": "invalid_request", "error_description": "username is required"}
        profile = {"name": subject.title(), "preferred_username": subject, "email": f"{subject}@example.com"}
        client_id = form.get("client_id") or "lakekeeper"
        access = self.mint(subject, {**profile, "azp": client_id, "scope": form.get("scope") or "openid"})
        return 200, {"access_token": access, "token_type": "Bearer", "expires_in": self.token_lifetime,
                     "id_token": self.mint(subject, {**profile, "aud": client_id})}

    def token_response(self, form: dict[str, str], authorization: str | None) -> tuple[int, dict[str, Any]]:
        """OAuth2 client credentials (RFC 6749 §4.4), secret in the body or HTTP Basic; or an
        authorization code from the browser sign-in (RFC 6749 §4.1 with PKCE, RFC 7636)."""
        if form.get("grant_type") == "authorization_code":
            return self._code_grant(form)
        if form.get("grant_type") == "password" and self.password_grant:
            return self._password_grant(form)
        if form.get("grant_type") != "client_credentials":
            return 400, {"error": "unsupported_grant_type"}
        client_id, secret = form.get("client_id"), form.get("client_secret")
        if authorization and authorization.lower().startswith("basic "):
            decoded = base64.b64decode(authorization[6:]).decode()
            client_id, _, secret = decoded.partition(":")
            client_id, secret = urllib.parse.unquote(client_id), urllib.parse.unquote(secret)
        if not client_id or self.clients.get(client_id) != secret:
            return 401, {"error": "invalid_client", "error_description": "unknown client or wrong secret"}
        scope = form.get("scope") or ""
        token = self.mint(
            f"service-account-{client_id}",
            {
                "client_id": client_id,
                "azp": client_id,
                "scope": scope,
                "preferred_username": f"service-account-{client_id}",
            },
        )
        return 200, {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": self.token_lifetime,
            "scope": scope,
        }
