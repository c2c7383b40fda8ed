"""The startup banner: one line saying what this process actually runs on.

A production deployment that silently fell back to the embedded SQLite, or whose event sink was
never configured, is only noticed when this line says so; it is logged once the backends are built,
so it names what is active, not what is installed.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from lakekeeper_host import __version__
from lakekeeper_host.service.state import AppState


def describe_database(write_url: str) -> str:
    """``postgresql db.example:5432/catalog`` or ``sqlite /abs/path (embedded)``; never credentials."""
    if write_url.startswith("sqlite"):
        return f"sqlite {write_url.split(':///', 1)[1]} (embedded)"
    parts = urlsplit(write_url)
    return f"postgresql {parts.hostname}:{parts.port or 5432}{parts.path}"


def security_warning(state: AppState) -> str | None:
    """One loud line when the catalog is open to anyone who reaches it: no authentication, served
    on a non-loopback address or with a PostgreSQL database (a shared deployment, not a laptop)."""
    settings = state.settings
    if settings.auth.enabled:
        return None
    loopback = settings.bind_ip in ("127.0.0.1", "::1", "localhost") or settings.bind_ip.startswith("127.")
    if loopback and settings.embedded:
        return None
    allow_all = getattr(state.authorizer, "allows_all", False)
    consequence = ("every caller is anonymous and may do everything (authorizer allowall): read and delete every "
                   "table, create warehouses, bootstrap the server" if allow_all
                   else f"every caller is anonymous (authorizer {settings.host.authz_backend})")
    return (f"SECURITY WARNING: this catalog is UNAUTHENTICATED, listening on {settings.bind_ip}:"
            f"{settings.host.listen_port}: {consequence}. Set LAKEKEEPER__OPENID_PROVIDER_URI (or Kubernetes "
            "authentication); LAKEKEEPER__REQUIRE_AUTHENTICATION=true (config/production.toml) refuses to start "
            "without it")


# the Trino policy key is a bearer credential sent in a URL path: shorter than 128 random bits in hex
# (openssl rand -hex 16) is within reach of guessing, or was typed by hand
TRINO_KEY_MIN_LENGTH = 32


def trino_key_warning(state: AppState) -> str | None:
    """A warning when the Trino policy endpoints are on with a key too short to be a credential."""
    key = state.settings.host.trino_opa.key
    if key is None or len(key.get()) >= TRINO_KEY_MIN_LENGTH:
        return None
    return (f"SECURITY WARNING: LAKEKEEPER__TRINO_OPA__KEY is {len(key.get())} characters long; it is the only "
            f"credential of the Trino policy endpoints (/trino/<key>/...), which decide for any Trino user. Use "
            f"at least {TRINO_KEY_MIN_LENGTH} random characters (openssl rand -hex 16)")


def startup_banner(state: AppState) -> str:
    settings = state.settings
    host = settings.bind_ip
    listen = f"http://{f'[{host}]' if ':' in host else host}:{settings.host.listen_port}"
    storage = sorted(spec.storage_type for spec in state.registry.unique(state.registry.storage))
    sinks = sorted(state.events.stats)
    secret_store = settings.host.secret_backend
    if secret_store.lower() == "postgres" and state.store.dialect != "postgresql":
        secret_store = "database (sqlite)"  # the built-in store keeps secrets in whichever database it has
    return (
        f"Lakekeeper {__version__} listening on {listen}; "
        f"database: {describe_database(state.store.write_url)}; "
        f"authorizer: {settings.host.authz_backend}; "
        f"secret store: {secret_store}; "
        f"event sinks: {', '.join(sinks) or 'none'}; "
        f"storage: {', '.join(storage) or 'none'}; "
        f"event loop: {running_event_loop()}"
    )


def running_event_loop() -> str:
    """``uvloop`` or ``asyncio``: the loop this process serves on (LAKEKEEPER__EVENT_LOOP, the `fast` extra)."""
    return "uvloop" if type(asyncio.get_running_loop()).__module__.startswith("uvloop") else "asyncio"
