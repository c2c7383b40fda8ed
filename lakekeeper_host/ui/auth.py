"""Console sign-in: OpenID Connect authorization code + PKCE (authlib), the session, CSRF.

The console is a public OIDC client (``UI__OPENID_CLIENT_ID``, no secret) like Lakekeeper's own
console, but the code exchange happens on the server: the browser only ever holds the session
cookie (HttpOnly, SameSite=Lax, path ``/ui``). The token inside the session is encrypted
(Fernet) so the cookie, which is only signed by Quart, does not carry it in clear. Forms carry a
per-session CSRF token that every POST must echo.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
import time
from typing import Any
from urllib.parse import urlencode

from cryptography.fernet import Fernet, InvalidToken
from quart import session

from lakekeeper_host.config import Settings

log = logging.getLogger(__name__)

SESSION_COOKIE = "lakekeeper_console"


def _derive(secret: str, purpose: str) -> bytes:
    return hmac.new(secret.encode(), purpose.encode(), hashlib.sha256).digest()


class ConsoleAuth:
    """What the console knows about signing in, read once from the settings."""

    def __init__(self, settings: Settings) -> None:
        ui = settings.host.ui
        self.ui = ui
        # Lakekeeper: the console's login is on iff OPENID_PROVIDER_URI is set
        self.enabled = bool(settings.auth.openid_provider_uri)
        self.provider_uri = (ui.openid_provider_uri or settings.auth.openid_provider_uri or "").rstrip("/")
        root = (ui.session_secret or settings.pg.pg_encryption_key).get()
        self.cookie_key = _derive(root, "lakekeeper-console-session-cookie").hex()
        self._fernet = Fernet(base64.urlsafe_b64encode(_derive(root, "lakekeeper-console-token")))
        self._discovery: dict[str, Any] | None = None

    # ------------------------------------------------------------ session contents

    def store_token(self, token: str, expires_at: float | None) -> None:
        session["token"] = self._fernet.encrypt(token.encode()).decode()
        session["expires_at"] = expires_at

    def token(self) -> str | None:
        """The signed-in user's bearer token; None when signed out or expired."""
        sealed = session.get("token")
        if not sealed:
            return None
        expires_at = session.get("expires_at")
        if expires_at is not None and expires_at < time.time():
            return None
        try:
            return self._fernet.decrypt(sealed.encode()).decode()
        except InvalidToken:
            return None

    # ------------------------------------------------------------ the provider

    async def discovery(self) -> dict[str, Any]:
        if self._discovery is None:
            import httpx  # sign-in only: not loaded when the server starts

            async with httpx.AsyncClient(timeout=10) as client:
                response = await client.get(self.provider_uri + "/.well-known/openid-configuration")
                response.raise_for_status()
                self._discovery = response.json()
        return self._discovery

    def _client(self, redirect_uri: str):
        from authlib.integrations.httpx_client import AsyncOAuth2Client

        return AsyncOAuth2Client(
            client_id=self.ui.openid_client_id,
            token_endpoint_auth_method="none",  # a public client: PKCE instead of a secret
            scope=self.ui.openid_scope,
            redirect_uri=redirect_uri,
            code_challenge_method="S256",
            timeout=10,
        )

    async def authorization_url(self, redirect_uri: str, next_path: str) -> str:
        """Where to send the browser to sign in; remembers state and PKCE verifier in the session."""
        endpoint = (await self.discovery())["authorization_endpoint"]
        state, verifier = secrets.token_urlsafe(24), secrets.token_urlsafe(48)
        extra = {"resource": self.ui.openid_resource} if self.ui.openid_resource else {}
        async with self._client(redirect_uri) as client:
            url, _ = client.create_authorization_url(endpoint, state=state, code_verifier=verifier, **extra)
        session["login"] = {"state": state, "verifier": verifier, "next": next_path}
        return url

    async def finish_login(self, redirect_uri: str, args: Any) -> str:
        """Exchange the code for tokens; returns the page to go back to. Raises ValueError on a bad callback."""
        pending = session.pop("login", None)
        if args.get("error"):
            reason = args.get("error_description") or args["error"]
            raise ValueError(f"The identity provider refused the sign-in: {reason}")
        if not pending or not hmac.compare_digest(str(args.get("state", "")), pending["state"]):
            raise ValueError("The sign-in could not be completed (unknown or reused state); please sign in again.")
        endpoint = (await self.discovery())["token_endpoint"]
        async with self._client(redirect_uri) as client:
            tokens = await client.fetch_token(
                endpoint, code=args.get("code", ""), code_verifier=pending["verifier"], grant_type="authorization_code"
            )
        token = tokens.get(self.ui.openid_token_type)
        if not token:
            raise ValueError(f"The identity provider returned no {self.ui.openid_token_type}")
        expires_at = tokens.get("expires_at") or (time.time() + float(tokens["expires_in"])
                                                  if tokens.get("expires_in") else None)
        session.clear()
        self.store_token(token, expires_at)
        return pending.get("next") or ""

    async def logout_url(self, post_logout_uri: str | None) -> str | None:
        """The provider's end-session URL (RP-initiated logout), or None to stay in the console."""
        if self.ui.openid_post_logout_redirect_disabled:
            return None
        import httpx

        try:
            endpoint = (await self.discovery()).get("end_session_endpoint")
        except httpx.HTTPError:
            return None
        if not endpoint:
            return None
        params = {"client_id": self.ui.openid_client_id}
        if post_logout_uri:
            params["post_logout_redirect_uri"] = post_logout_uri
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"


# ---------------------------------------------------------------- CSRF


def csrf_token() -> str:
    token = session.get("csrf")
    if not token:
        token = session["csrf"] = secrets.token_urlsafe(32)
    return token


def csrf_valid(submitted: str | None) -> bool:
    expected = session.get("csrf")
    return bool(expected and submitted and hmac.compare_digest(expected, submitted))
