"""SASL/OAUTHBEARER with the OAuth2 client-credentials grant (librdkafka's ``method=oidc``)."""

from __future__ import annotations

import asyncio
import time

import httpx
from aiokafka.abc import AbstractTokenProvider

# refresh this long before the token expires
_EARLY_REFRESH_SECONDS = 60


class ClientCredentialsTokenProvider(AbstractTokenProvider):
    def __init__(self, *, token_url: str, client_id: str, client_secret: str, scope: str | None = None):
        self._token_url = token_url
        self._client_id = client_id
        self._client_secret = client_secret
        self._scope = scope
        self._token: str | None = None
        self._expires_at = 0.0
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        return f"ClientCredentialsTokenProvider(token_url={self._token_url!r}, client_id={self._client_id!r})"

    async def token(self) -> str:
        async with self._lock:
            if self._token is None or time.monotonic() >= self._expires_at:
                await self._refresh()
            assert self._token is not None
            return self._token

    async def _refresh(self) -> None:
        form = {"grant_type": "client_credentials"}
        if self._scope:
            form["scope"] = self._scope
        async with httpx.AsyncClient(timeout=10) as client:
            response = await client.post(self._token_url, data=form, auth=(self._client_id, self._client_secret))
        response.raise_for_status()
        body = response.json()
        self._token = body["access_token"]
        lifetime = float(body.get("expires_in", 300))
        self._expires_at = time.monotonic() + max(lifetime - _EARLY_REFRESH_SECONDS, lifetime / 2)
