"""Authentication: OpenID Connect providers (several at once) and Kubernetes service accounts.

``Authenticator.authenticate(authorization)`` turns an ``Authorization: Bearer <JWT>`` header into
an ``Actor`` or raises a ``CatalogError`` (401, or 503 when an identity provider cannot be
reached). Lakekeeper's rules (reference §4.7, §5.1):

- Providers: the primary one (``OPENID_PROVIDER_URI``, idp id ``oidc``), then
  ``OPENID_PROVIDERS__<ID>__*`` sorted by id, then Kubernetes (TokenReview, idp ``kubernetes``).
  A token goes to the first OIDC provider whose issuers contain its ``iss`` (preferring one whose
  audience also matches); tokens no OIDC provider claims go to Kubernetes when it is enabled.
  There is no fall-through after a provider rejected a token.
- OIDC: keys come from the provider's JWKS (discovered at ``<uri>/.well-known/openid-configuration``),
  cached, refetched on an unknown ``kid`` at most every ``UNKNOWN_KID_REFRESH_SECONDS``. Only
  asymmetric algorithms are accepted, so ``alg=none`` and "HS256 signed with the public key" fail.
  Checks: signature, ``iss`` (discovered issuer plus ``ADDITIONAL_ISSUERS``), ``aud`` (any of
  ``AUDIENCE`` when set), ``SCOPE`` (when set), ``exp`` (required) and ``nbf`` with a small leeway.
- User id ``<idp-id>~<subject>``, subject = first present claim of ``SUBJECT_CLAIM(S)``.

Error messages help an operator (which provider, which claim, what was expected) and never
contain the token. Nothing here touches Quart; ``api/pipeline.py`` wires it into requests.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import logging
import os
import re
import string
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from joserfc import jws
from joserfc.errors import JoseError
from joserfc.jwk import JWKRegistry

from lakekeeper_host.config.model import AuthConfig, OpenIdProviderConfig
from lakekeeper_host.errors import CatalogError
from lakekeeper_host.registry import StartupError
from lakekeeper_host.service.authz import Actor

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

OIDC_IDP_ID = "oidc"
K8S_IDP_ID = "kubernetes"
IDP_SEPARATOR = "~"
RESERVED_IDP_IDS = frozenset({OIDC_IDP_ID, K8S_IDP_ID})
_IDP_ID = re.compile(r"^[a-z0-9-]+$")

ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
_KEY_TYPE_FOR_ALG = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
LEEWAY_SECONDS = 60
HTTP_TIMEOUT_SECONDS = 5.0
JWKS_MAX_AGE_SECONDS = 3600
UNKNOWN_KID_REFRESH_SECONDS = 10.0
FAILED_FETCH_RETRY_SECONDS = 1.0
RETRY_AFTER_SECONDS = 5
K8S_REVIEW_CACHE_SECONDS = 60
K8S_REVIEW_CACHE_SIZE = 10_000
LEGACY_K8S_ISSUERS = ("kubernetes/serviceaccount",)
MAX_SUBJECT_LENGTH = 128


# ---------------------------------------------------------------- errors


def _header_text(text: str) -> str:
    """A value safe inside a quoted ``WWW-Authenticate`` parameter (ASCII, no quotes)."""
    return text.encode("ascii", "replace").decode().replace('"', "'").replace("\\", "/")


def missing_authorization() -> CatalogError:
    return CatalogError(
        401,
        "MissingAuthorizationHeader",
        "Missing Authorization Header: this server requires 'Authorization: Bearer <token>'",
        headers={"WWW-Authenticate": "Bearer"},
    )


def authentication_failed(reason: str) -> CatalogError:
    """401 for a token that was presented but is not acceptable (RFC 6750 ``invalid_token``)."""
    return CatalogError(
        401,
        "AuthenticationFailed",
        f"Authentication failed: {reason}",
        headers={
            "WWW-Authenticate": f'Bearer error="invalid_token", error_description="{_header_text(reason)}"'
        },
    )


def identity_provider_unavailable(idp_id: str, detail: str) -> CatalogError:
    return CatalogError(
        503,
        "IdentityProviderUnavailable",
        f"Identity provider '{idp_id}' is unreachable, so the token cannot be verified "
        f"right now: {detail}",
        headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
    )


class ProviderUnreachable(Exception):
    """Discovery, JWKS or TokenReview endpoint could not be reached or answered nonsense."""


# ---------------------------------------------------------------- token parsing (unverified)


def bearer_token(authorization: str | None) -> str:
    """The token of ``Authorization: Bearer <token>``; 401 for a missing or malformed header."""
    if authorization is None or not authorization.strip():
        raise missing_authorization()
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer":
        raise authentication_failed(
            f"unsupported authorization scheme '{scheme[:20]}'; use 'Authorization: Bearer <token>'"
        )
    token = token.strip()
    if not token:
        raise authentication_failed("the Authorization header has no token after 'Bearer'")
    return token


def _b64_json(segment: str, what: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
        value = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise authentication_failed(f"the bearer token is not a JWT (its {what} is not base64url JSON)") from None
    if not isinstance(value, dict):
        raise authentication_failed(f"the bearer token is not a JWT (its {what} is not a JSON object)")
    return value


def peek(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Header and claims WITHOUT verification — only to route the token and pick a key."""
    parts = token.split(".")
    if len(parts) != 3:
        raise authentication_failed(
            "the bearer token is not a JWT (expected three dot-separated parts); "
            "only JWT access tokens are supported, not opaque tokens"
        )
    return _b64_json(parts[0], "header"), _b64_json(parts[1], "payload")


def _audiences(claims: Mapping[str, Any]) -> list[str]:
    aud = claims.get("aud")
    if isinstance(aud, str):
        return [aud]
    if isinstance(aud, list):
        return [a for a in aud if isinstance(a, str)]
    return []


def _norm_issuer(value: str) -> str:
    return value.rstrip("/")


# ---------------------------------------------------------------- claims -> identity


def validate_subject(subject: str) -> str:
    if not subject:
        raise authentication_failed("the token's subject claim is empty")
    if len(subject) >= MAX_SUBJECT_LENGTH:
        raise authentication_failed(f"the token's subject is {len(subject)} characters; it must be shorter than 128")
    if any(ord(c) < 32 or ord(c) == 127 for c in subject):
        raise authentication_failed("the token's subject contains control characters")
    return subject


def subject_from_claims(claims: Mapping[str, Any], subject_claims: Iterable[str], idp_id: str) -> str:
    order = tuple(subject_claims)
    for claim in order:
        value = claims.get(claim)
        if isinstance(value, str) and value:
            return validate_subject(value)
    raise authentication_failed(
        f"the token has none of the subject claims {', '.join(order)} "
        f"(configured for identity provider '{idp_id}' by SUBJECT_CLAIM(S))"
    )


def _str_claim(claims: Mapping[str, Any], name: str) -> str | None:
    value = claims.get(name)
    return value if isinstance(value, str) and value else None


def human_name(claims: Mapping[str, Any]) -> str | None:
    if name := _str_claim(claims, "name"):
        return name
    first = _str_claim(claims, "given_name") or _str_claim(claims, "first_name")
    last = _str_claim(claims, "family_name") or _str_claim(claims, "last_name")
    return " ".join(p for p in (first, last) if p) or None


def display_name(claims: Mapping[str, Any], template: str | None = None) -> str | None:
    """``name`` | given/family name | ``app_displayname`` | ``preferred_username`` | template."""
    name = human_name(claims) or _str_claim(claims, "app_displayname") or _str_claim(claims, "preferred_username")
    if name or not template:
        return name
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f]
        if all(_str_claim(claims, f) for f in fields):
            return template.format_map({f: claims[f] for f in fields})
    except (ValueError, KeyError, IndexError):
        log.warning("OPENID_DISPLAY_NAME_TEMPLATE %r is not a valid template", template)
    return None


def email_from_claims(claims: Mapping[str, Any]) -> str | None:
    if email := _str_claim(claims, "email"):
        return email
    for name in ("upn", "preferred_username"):
        value = _str_claim(claims, name)
        if value and "@" in value:
            return value
    return None


def principal_type(actor: Actor) -> str | None:
    """``human`` / ``application`` as Lakekeeper infers it from the token, or None if unknown."""
    if actor.idp == K8S_IDP_ID:
        return "application"
    claims = actor.claims or {}
    idtyp = claims.get("idtyp")
    if idtyp == "user":
        return "human"
    if idtyp in ("app", "device"):
        return "application"
    if human_name(claims):
        return "human"
    if _str_claim(claims, "app_displayname") or "client_id" in claims:
        return "application"
    return None


def roles_from_claims(claims: Mapping[str, Any], path: str | None) -> list[str] | None:
    """Roles at a dot-path claim (``OPENID_ROLES_CLAIM``, e.g. ``resource_access.account.roles``)."""
    if not path:
        return None
    node: Any = claims
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [r for r in node if isinstance(r, str)]
    return None


# ---------------------------------------------------------------- OIDC provider


def _import_keys(jwks: Any) -> dict[str, Any]:
    """kid -> public key; skips encryption keys, symmetric keys and keys joserfc cannot read."""
    if not isinstance(jwks, Mapping) or not isinstance(jwks.get("keys"), list):
        raise ProviderUnreachable("the JWKS document has no 'keys' list")
    keys: dict[str, Any] = {}
    for entry in jwks["keys"]:
        if not isinstance(entry, Mapping) or entry.get("use") == "enc":
            continue
        if entry.get("kty") not in ("RSA", "EC", "OKP"):
            continue  # never accept a symmetric ('oct') key from a JWKS
        try:
            key = JWKRegistry.import_key(dict(entry))
        except (JoseError, ValueError, TypeError) as exc:
            log.warning("skipping unreadable JWKS key %r: %s", entry.get("kid"), exc)
            continue
        keys[str(entry.get("kid") or "")] = key
    return keys


class OidcProvider:
    """One OpenID Connect identity provider: discovery, a JWKS cache, token verification."""

    def __init__(
        self,
        idp_id: str,
        config: OpenIdProviderConfig,
        http: httpx.AsyncClient,
        *,
        env_prefix: str,
    ) -> None:
        self.idp_id = idp_id
        self.config = config
        self.http = http
        self.env_prefix = env_prefix  # names the variables in operator messages
        self.uri = config.uri.rstrip("/")
        self.issuer: str | None = None
        self.jwks_uri: str | None = None
        self.keys: dict[str, Any] = {}
        self.keys_fetched_at = 0.0
        self._next_refresh_at = 0.0
        self._last_error: str | None = None
        self._lock = asyncio.Lock()

    # --- discovery and keys

    @property
    def connected(self) -> bool:
        return self.jwks_uri is not None

    async def _get_json(self, url: str, what: str) -> Any:
        import httpx  # loaded by Authenticator.start: only a server with authentication needs it

        try:
            response = await self.http.get(url)
        except httpx.HTTPError as exc:
            raise ProviderUnreachable(f"cannot fetch {what} from {url}: {type(exc).__name__}: {exc}") from None
        if response.status_code != 200:
            raise ProviderUnreachable(f"{what} at {url} answered HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError:
            raise ProviderUnreachable(f"{what} at {url} is not JSON") from None

    async def connect(self) -> None:
        """Discovery plus the first JWKS fetch; raises ``ProviderUnreachable``."""
        url = f"{self.uri}/.well-known/openid-configuration"
        doc = await self._get_json(url, "the OpenID configuration")
        if not isinstance(doc, Mapping) or not doc.get("issuer") or not doc.get("jwks_uri"):
            raise ProviderUnreachable(f"the OpenID configuration at {url} lacks 'issuer' or 'jwks_uri'")
        self.issuer = str(doc["issuer"])
        self.jwks_uri = str(doc["jwks_uri"])
        await self._fetch_keys()

    async def _fetch_keys(self) -> None:
        assert self.jwks_uri is not None
        keys = _import_keys(await self._get_json(self.jwks_uri, "the JWKS"))
        self.keys = keys
        self.keys_fetched_at = time.monotonic()
        log.info("identity provider %s: %d signing key(s) loaded from %s", self.idp_id, len(keys), self.jwks_uri)

    async def refresh(self) -> None:
        """Rediscover/refetch under a lock, rate-limited so unknown ``kid``s cannot hammer the IdP."""
        async with self._lock:
            if time.monotonic() < self._next_refresh_at:
                if self._last_error is not None:  # the last attempt failed: still down
                    raise ProviderUnreachable(self._last_error)
                return  # refreshed moments ago (possibly by a concurrent request)
            try:
                if self.connected:
                    await self._fetch_keys()
                else:
                    await self.connect()
            except ProviderUnreachable as exc:
                self._last_error = str(exc)
                self._next_refresh_at = time.monotonic() + FAILED_FETCH_RETRY_SECONDS
                raise
            self._last_error = None
            self._next_refresh_at = time.monotonic() + UNKNOWN_KID_REFRESH_SECONDS

    async def key_for(self, kid: str) -> Any | None:
        if time.monotonic() - self.keys_fetched_at > JWKS_MAX_AGE_SECONDS:
            try:  # periodic refresh; on failure keep serving with the cached keys
                await self.refresh()
            except ProviderUnreachable as exc:
                log.warning("identity provider %s: JWKS refresh failed, using cached keys: %s", self.idp_id, exc)
        key = self.keys.get(kid)
        if key is not None:
            return key
        try:  # a new kid: the IdP may have rotated its keys
            await self.refresh()
        except ProviderUnreachable as exc:
            # the cached keys keep working; a key we have never seen cannot be trusted (401, as
            # Lakekeeper), and the message says why so the client can retry once the IdP is back
            raise authentication_failed(
                f"signing key '{kid[:64]}' is not among the cached keys of identity provider "
                f"'{self.idp_id}' and its JWKS cannot be fetched right now ({exc})"
            ) from None
        return self.keys.get(kid)

    # --- routing

    def issuers(self) -> set[str]:
        found = {_norm_issuer(i) for i in self.config.additional_issuers}
        # before discovery succeeded the configured URI stands in for the issuer (they are
        # the same for almost every IdP), so the token can be routed here and get a 503
        found.add(_norm_issuer(self.issuer or self.uri))
        return found

    def accepts_issuer(self, iss: str) -> bool:
        return _norm_issuer(iss) in self.issuers()

    def accepts_audience(self, audiences: list[str]) -> bool:
        return not self.config.audience or any(a in self.config.audience for a in audiences)

    # --- verification

    async def verify(self, token: str, header: Mapping[str, Any], unverified: Mapping[str, Any]) -> Actor:
        if not self.connected:
            try:
                await self.refresh()
            except ProviderUnreachable as exc:
                raise identity_provider_unavailable(self.idp_id, str(exc)) from None
        alg = header.get("alg")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise authentication_failed("the token header has no key id ('kid')")
        key = await self.key_for(kid)
        if key is None:
            raise authentication_failed(
                f"signing key '{kid[:64]}' is not in the JWKS of identity provider '{self.idp_id}' "
                f"({self.jwks_uri}); the token was signed by another issuer or with a retired key"
            )
        key_alg = key.alg
        if key_alg and key_alg != alg:
            raise authentication_failed(
                f"the token says alg '{alg}' but key '{kid[:64]}' of identity provider "
                f"'{self.idp_id}' is for '{key_alg}'"
            )
        if _KEY_TYPE_FOR_ALG.get(str(alg)[:2]) != key.key_type:
            raise authentication_failed(
                f"algorithm '{alg}' does not fit the {key.key_type} key '{kid[:64]}' "
                f"of identity provider '{self.idp_id}'"
            )
        try:
            verified = jws.deserialize_compact(token, key, algorithms=[alg])
            claims = json.loads(verified.payload)
        except (JoseError, ValueError):
            raise authentication_failed(
                f"the token signature does not verify with key '{kid[:64]}' of identity provider "
                f"'{self.idp_id}' (tampered token, or a different key with the same id)"
            ) from None
        if not isinstance(claims, dict):
            raise authentication_failed("the token payload is not a JSON object")
        self._check_claims(claims)
        subject = subject_from_claims(claims, self.config.subject_claims, self.idp_id)
        return Actor(
            user_id=f"{self.idp_id}{IDP_SEPARATOR}{subject}",
            name=display_name(claims, self.config.display_name_template),
            email=email_from_claims(claims),
            idp=self.idp_id,
            claims=claims,
        )

    def _check_claims(self, claims: Mapping[str, Any]) -> None:
        now = time.time()
        iss = claims.get("iss")
        if not isinstance(iss, str) or not self.accepts_issuer(iss):
            raise authentication_failed(
                f"token issuer '{iss}' is not an issuer of identity provider '{self.idp_id}' "
                f"(accepted: {', '.join(sorted(self.issuers()))}; see {self.env_prefix}ADDITIONAL_ISSUERS)"
            )
        exp = claims.get("exp")
        if isinstance(exp, bool) or not isinstance(exp, (int, float)):
            raise authentication_failed("the token has no numeric 'exp' (expiry) claim")
        if now > exp + LEEWAY_SECONDS:
            raise authentication_failed(
                f"the token expired at {_utc(exp)} (server time {_utc(now)}); fetch a new token"
            )
        nbf = claims.get("nbf")
        if isinstance(nbf, (int, float)) and not isinstance(nbf, bool) and now + LEEWAY_SECONDS < nbf:
            raise authentication_failed(f"the token is not valid before {_utc(nbf)} (server time {_utc(now)})")
        audiences = _audiences(claims)
        if not self.accepts_audience(audiences):
            raise authentication_failed(
                f"token audience {audiences} does not include any audience accepted by identity "
                f"provider '{self.idp_id}' ({', '.join(self.config.audience)}; see {self.env_prefix}AUDIENCE)"
            )
        if self.config.scope:
            granted = claims.get("scope") or claims.get("scp") or ""
            granted_set = set(
                granted.split() if isinstance(granted, str) else granted if isinstance(granted, list) else []
            )
            missing = [s for s in self.config.scope.split() if s not in granted_set]
            if missing:
                raise authentication_failed(
                    f"the token lacks the required scope {' '.join(missing)} "
                    f"(identity provider '{self.idp_id}', {self.env_prefix}SCOPE)"
                )


def _utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


# ---------------------------------------------------------------- Kubernetes


class KubernetesProvider:
    """Service-account tokens validated by the cluster's TokenReview API."""

    idp_id = K8S_IDP_ID

    def __init__(self, config: AuthConfig, http: httpx.AsyncClient) -> None:
        if config.kubernetes_authentication_subject_source not in ("uid", "username"):
            raise StartupError(
                "LAKEKEEPER__KUBERNETES_AUTHENTICATION_SUBJECT_SOURCE must be 'uid' or 'username', "
                f"got {config.kubernetes_authentication_subject_source!r}"
            )
        self.config = config
        self.http = http
        self.url = config.kubernetes_api_url.rstrip("/") + "/apis/authentication.k8s.io/v1/tokenreviews"
        self._reviews: OrderedDict[str, tuple[float, Actor]] = OrderedDict()

    def check_startup(self) -> None:
        try:
            self._service_account_token()
        except OSError as exc:
            raise StartupError(
                "LAKEKEEPER__ENABLE_KUBERNETES_AUTHENTICATION is set but the server's own service-account "
                f"token cannot be read from {self.config.kubernetes_token_file} "
                f"(LAKEKEEPER__KUBERNETES_TOKEN_FILE): {exc.strerror or exc}"
            ) from None

    def _service_account_token(self) -> str:
        # re-read each time: the kubelet rotates projected tokens
        with open(self.config.kubernetes_token_file, encoding="utf-8") as fh:
            return fh.read().strip()

    async def verify(self, token: str, unverified: Mapping[str, Any]) -> Actor:
        iss = unverified.get("iss")
        if iss in LEGACY_K8S_ISSUERS and not self.config.kubernetes_authentication_accept_legacy_serviceaccount:
            raise authentication_failed(
                "legacy Kubernetes service-account tokens are not accepted "
                "(LAKEKEEPER__KUBERNETES_AUTHENTICATION_ACCEPT_LEGACY_SERVICEACCOUNT=false)"
            )
        cache_key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._reviews.get(cache_key)
        now = time.monotonic()
        if cached is not None and cached[0] > now:
            return cached[1]
        status = await self._review(token)
        if not status.get("authenticated"):
            reason = status.get("error") or "the token is not valid"
            raise authentication_failed(f"Kubernetes TokenReview rejected the token: {str(reason)[:200]}")
        wanted = self.config.kubernetes_authentication_audience
        granted = status.get("audiences") or []
        if wanted and not any(a in wanted for a in granted):
            raise authentication_failed(
                f"Kubernetes token audiences {granted} do not include any of {list(wanted)} "
                "(LAKEKEEPER__KUBERNETES_AUTHENTICATION_AUDIENCE)"
            )
        user = status.get("user") or {}
        username = user.get("username") if isinstance(user.get("username"), str) else None
        uid = user.get("uid") if isinstance(user.get("uid"), str) else None
        source = self.config.kubernetes_authentication_subject_source
        subject = uid if source == "uid" else username
        if not subject:
            raise authentication_failed(f"the Kubernetes TokenReview returned no user {source}")
        actor = Actor(
            user_id=f"{K8S_IDP_ID}{IDP_SEPARATOR}{validate_subject(subject)}",
            name=username,
            idp=K8S_IDP_ID,
            claims={"kubernetes": dict(user)},
        )
        exp = unverified.get("exp")
        ttl = K8S_REVIEW_CACHE_SECONDS
        if isinstance(exp, (int, float)) and not isinstance(exp, bool):
            ttl = min(ttl, max(0.0, exp - time.time()))
        if ttl > 0:
            self._reviews[cache_key] = (now + ttl, actor)
            while len(self._reviews) > K8S_REVIEW_CACHE_SIZE:
                self._reviews.popitem(last=False)
        return actor

    async def _review(self, token: str) -> Mapping[str, Any]:
        spec: dict[str, Any] = {"token": token}
        if self.config.kubernetes_authentication_audience:
            spec["audiences"] = list(self.config.kubernetes_authentication_audience)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        try:
            own_token = self._service_account_token()
        except OSError as exc:
            raise identity_provider_unavailable(
                K8S_IDP_ID, f"cannot read the server's service-account token: {exc}"
            ) from None
        import httpx  # loaded by Authenticator.start

        try:
            response = await self.http.post(self.url, json=body, headers={"Authorization": f"Bearer {own_token}"})
        except httpx.HTTPError as exc:
            raise identity_provider_unavailable(
                K8S_IDP_ID, f"TokenReview at {self.url} failed: {type(exc).__name__}"
            ) from None
        if response.status_code >= 500 or response.status_code in (401, 403, 429):
            raise identity_provider_unavailable(
                K8S_IDP_ID, f"TokenReview at {self.url} answered HTTP {response.status_code}"
            )
        try:
            status = response.json().get("status") or {}
        except (ValueError, AttributeError):
            raise identity_provider_unavailable(K8S_IDP_ID, f"TokenReview at {self.url} did not answer JSON") from None
        return status if isinstance(status, Mapping) else {}


# ---------------------------------------------------------------- the chain


def provider_configs(auth: AuthConfig) -> list[tuple[str, OpenIdProviderConfig, str]]:
    """(idp id, config, env prefix) in chain order: primary first, then extra providers by id."""
    providers: list[tuple[str, OpenIdProviderConfig, str]] = []
    if auth.openid_provider_uri:
        providers.append(
            (
                OIDC_IDP_ID,
                OpenIdProviderConfig(
                    uri=auth.openid_provider_uri,
                    audience=auth.openid_audience,
                    additional_issuers=auth.openid_additional_issuers,
                    scope=auth.openid_scope,
                    subject_claims=auth.openid_subject_claim,
                    roles_claim=auth.openid_roles_claim,
                    display_name_template=auth.openid_display_name_template,
                    require_connected_on_startup=True,
                ),
                "LAKEKEEPER__OPENID_",
            )
        )
    for idp_id in sorted(auth.openid_providers):
        if not _IDP_ID.match(idp_id) or idp_id in RESERVED_IDP_IDS:
            raise StartupError(
                f"LAKEKEEPER__OPENID_PROVIDERS__{idp_id.upper()}: provider id {idp_id!r} must match "
                "[a-z0-9-]+ and may not be 'oidc' or 'kubernetes'"
            )
        providers.append(
            (idp_id, auth.openid_providers[idp_id], f"LAKEKEEPER__OPENID_PROVIDERS__{idp_id.upper()}__")
        )
    return providers


class Authenticator:
    def __init__(
        self,
        oidc: list[OidcProvider],
        kubernetes: KubernetesProvider | None,
        clients: list[httpx.AsyncClient],
    ) -> None:
        self.oidc = oidc
        self.kubernetes = kubernetes
        self._clients = clients

    @classmethod
    async def start(cls, auth: AuthConfig) -> Authenticator | None:
        """Build and connect every configured provider; None when authentication is off.

        A required provider that cannot be reached is a ``StartupError``; an optional one
        (``REQUIRE_CONNECTED_ON_STARTUP=false``) logs a warning and connects on first use.
        """
        if not auth.enabled:
            return None
        import httpx  # here, not at import: a server without authentication starts without it

        configs = provider_configs(auth)
        http = httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS, follow_redirects=True)
        clients = [http]
        try:
            oidc = [OidcProvider(i, c, http, env_prefix=p) for i, c, p in configs]
            connected = 0
            for provider in oidc:
                try:
                    await provider.connect()
                    connected += 1
                except ProviderUnreachable as exc:
                    if provider.config.require_connected_on_startup:
                        hint = (
                            "the primary provider (LAKEKEEPER__OPENID_PROVIDER_URI) is always required"
                            if provider.idp_id == OIDC_IDP_ID
                            else f"or set {provider.env_prefix}REQUIRE_CONNECTED_ON_STARTUP=false to start without it"
                        )
                        raise StartupError(
                            f"identity provider '{provider.idp_id}' ({provider.uri}) is unreachable: {exc}. "
                            f"Fix the URI or the network; {hint}"
                        ) from None
                    log.warning(
                        "identity provider %s (%s) is unreachable, continuing because it is optional "
                        "(REQUIRE_CONNECTED_ON_STARTUP=false); its tokens get 503 until it answers: %s",
                        provider.idp_id, provider.uri, exc,
                    )
            if oidc and not connected and not auth.enable_kubernetes_authentication:
                raise StartupError(
                    f"all {len(oidc)} configured OIDC provider(s) are unreachable; refusing to start "
                    "with no working authentication"
                )
            kubernetes = None
            if auth.enable_kubernetes_authentication:
                verify: Any = True
                if auth.kubernetes_api_url.startswith("https") and os.path.exists(auth.kubernetes_ca_file):
                    verify = auth.kubernetes_ca_file
                k8s_http = httpx.AsyncClient(timeout=HTTP_TIMEOUT_SECONDS, verify=verify)
                clients.append(k8s_http)
                kubernetes = KubernetesProvider(auth, k8s_http)
                kubernetes.check_startup()
        except BaseException:
            for client in clients:
                await client.aclose()
            raise
        return cls(oidc, kubernetes, clients)

    async def close(self) -> None:
        for client in self._clients:
            await client.aclose()

    def _route(self, iss: Any, audiences: list[str]) -> OidcProvider | None:
        if not isinstance(iss, str):
            return None
        candidates = [p for p in self.oidc if p.accepts_issuer(iss)]
        for provider in candidates:
            if provider.accepts_audience(audiences):
                return provider
        return candidates[0] if candidates else None

    async def _rediscover_unconnected(self) -> None:
        for provider in self.oidc:
            if not provider.connected:
                try:
                    await provider.refresh()
                except ProviderUnreachable:
                    pass

    async def authenticate(self, authorization: str | None) -> Actor:
        token = bearer_token(authorization)
        header, unverified = peek(token)
        alg = header.get("alg")
        if alg not in ASYMMETRIC_ALGORITHMS:
            raise authentication_failed(
                f"signing algorithm '{str(alg)[:20]}' is not accepted; tokens must be signed with an "
                f"asymmetric algorithm ({', '.join(sorted(ASYMMETRIC_ALGORITHMS))}) by a configured identity provider"
            )
        iss = unverified.get("iss")
        audiences = _audiences(unverified)
        provider = self._route(iss, audiences)
        if provider is None and any(not p.connected for p in self.oidc):
            await self._rediscover_unconnected()  # the issuer may belong to a provider that was down
            provider = self._route(iss, audiences)
        if provider is not None:
            return await provider.verify(token, header, unverified)
        if self.kubernetes is not None:
            return await self.kubernetes.verify(token, unverified)
        trusted = sorted({i for p in self.oidc for i in p.issuers()})
        raise authentication_failed(
            f"token issuer '{str(iss)[:200]}' is not trusted by this server "
            f"(trusted issuers: {', '.join(trusted) or 'none'})"
        )
