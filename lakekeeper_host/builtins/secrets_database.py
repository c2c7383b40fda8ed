"""Built-in secret store ``postgres``: secrets encrypted in the catalog database.

The same backend serves SQLite. Values are sealed with AES-256-GCM under a key derived from
``LAKEKEEPER__PG_ENCRYPTION_KEY`` (scrypt); the row holds only nonce + ciphertext, and the secret
id is bound as associated data, so a ciphertext copied onto another row does not open.
``lakekeeper rotate-encryption-key`` re-seals every row under a new key
(``lakekeeper_host.server.management.key_rotation``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import os
from typing import TYPE_CHECKING, Any

from attrs import frozen
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from lakekeeper_host import hookimpl
from lakekeeper_host.config import PgConfig
from lakekeeper_host.registry import BackendSpec, BuildContext, StartupError
from lakekeeper_host.service.secrets import SecretStore, SecretStoreError
from lakekeeper_host.store import Executor
from lakekeeper_host.store import secrets as secret_store

if TYPE_CHECKING:
    from lakekeeper_host.service.state import AppState

log = logging.getLogger(__name__)
_FORMAT = "v1"
_SALT = b"lakekeeper-host/secret-store/v1"
_NONCE_BYTES = 12


class SecretDecryptionError(SecretStoreError):
    """A stored secret does not open with the configured key (wrong key, or a damaged row)."""

    def __init__(
        self, secret_id: str, reason: str = "cannot be decrypted with the configured LAKEKEEPER__PG_ENCRYPTION_KEY"
    ):
        super().__init__(f"Secret {secret_id} {reason}", code=500, type_="SecretDecryptionError")
        self.secret_id = secret_id


def derive_key(passphrase: str) -> bytes:
    return hashlib.scrypt(passphrase.encode(), salt=_SALT, n=2**14, r=8, p=1, dklen=32)


def seal(key: bytes, secret_id: str, value: dict[str, Any]) -> str:
    nonce = os.urandom(_NONCE_BYTES)
    ciphertext = AESGCM(key).encrypt(nonce, json.dumps(value).encode(), secret_id.encode())
    return f"{_FORMAT}:" + base64.b64encode(nonce + ciphertext).decode()


def open_sealed(key: bytes, secret_id: str, sealed: str) -> dict[str, Any]:
    version, _, payload = sealed.partition(":")
    if version != _FORMAT:
        raise SecretDecryptionError(secret_id, f"has an unknown format {version!r}")
    try:
        raw = base64.b64decode(payload, validate=True)
        plain = AESGCM(key).decrypt(raw[:_NONCE_BYTES], raw[_NONCE_BYTES:], secret_id.encode())
    except (InvalidTag, binascii.Error, ValueError):
        raise SecretDecryptionError(secret_id) from None
    value: dict[str, Any] = json.loads(plain)
    return value


@frozen
class Resealed:
    """What re-sealing the table under a new key did."""

    resealed: int
    already_current: int


class DatabaseSecretStore:
    """The ``secret`` table. ``db`` is the store, or a transaction for work that must be atomic."""

    name = "postgres"

    def __init__(self, db: Executor, key: bytes):
        self.db = db
        self._key = key

    def __repr__(self) -> str:
        return "DatabaseSecretStore()"

    async def create_impl(self, secret_id: str, value: dict[str, Any]) -> None:
        await secret_store.insert_secret(self.db, secret_id, seal(self._key, secret_id, value))

    async def get_impl(self, secret_id: str) -> dict[str, Any] | None:
        ciphertext = await secret_store.get_ciphertext(self.db, secret_id)
        return None if ciphertext is None else open_sealed(self._key, secret_id, ciphertext)

    async def delete_impl(self, secret_id: str) -> None:
        await secret_store.delete_secret(self.db, secret_id)

    async def health(self) -> bool:
        return await self.db.ping()

    async def close(self) -> None:
        return None

    async def check_key(self) -> None:
        """Fail when the newest stored secret does not open: the server runs with a stale key."""
        row = await secret_store.newest_secret(self.db)
        if row is None:
            return
        try:
            open_sealed(self._key, row["id"], row["ciphertext"])
        except SecretDecryptionError:
            raise StartupError(
                f"LAKEKEEPER__PG_ENCRYPTION_KEY does not decrypt the stored secrets (secret {row['id']} "
                "does not open). Configure the key they were written with -- after "
                "`lakekeeper rotate-encryption-key` that is the new key. To move secrets written with "
                "another key (e.g. the default one) to this key, configure that key and run "
                "`lakekeeper rotate-encryption-key --new-key-file <file>`."
            ) from None

    async def reseal_all(self, new_key: bytes) -> Resealed:
        """Re-encrypt every row under ``new_key``; rows that already open with it are left alone.

        Run it inside a transaction: any row that opens with neither key aborts the whole run, so
        the table is never left half old, half new. Skipping rows already under the new key makes
        a repeated run safe (e.g. after a server kept writing with the old key).
        """
        await secret_store.lock_for_rewrite(self.db)
        rows = await secret_store.all_secrets(self.db)
        resealed = already = 0
        unreadable: list[str] = []
        for row in rows:
            secret_id, sealed = row["id"], row["ciphertext"]
            try:
                value = open_sealed(self._key, secret_id, sealed)
            except SecretDecryptionError:
                try:
                    open_sealed(new_key, secret_id, sealed)
                except SecretDecryptionError:
                    unreadable.append(secret_id)
                else:
                    already += 1
                continue
            await secret_store.update_ciphertext(self.db, secret_id, seal(new_key, secret_id, value))
            resealed += 1
        if unreadable:
            shown = ", ".join(unreadable[:5]) + (f" and {len(unreadable) - 5} more" if len(unreadable) > 5 else "")
            raise SecretDecryptionError(
                shown,
                "open(s) with neither the configured LAKEKEEPER__PG_ENCRYPTION_KEY nor the new key; "
                "nothing was changed",
            )
        return Resealed(resealed=resealed, already_current=already)

def warn_if_default_key(pg: PgConfig, *, embedded: bool = False) -> None:
    """Lakekeeper's loud warning for a server on PostgreSQL; the embedded quickstart (SQLite on a
    laptop, usually without any stored credential) says the same once, calmly."""
    if not pg.encryption_key_is_default:
        return
    if embedded:
        log.info("LAKEKEEPER__PG_ENCRYPTION_KEY is not set: storage credentials you add are encrypted with the "
                 "built-in default key; set a long random key before storing real credentials")
        return
    log.warning(
        "THIS IS UNSAFE! LAKEKEEPER__PG_ENCRYPTION_KEY is not set: secrets are encrypted "
        "with the publicly known default key. Set a long random key before storing real credentials."
    )


async def _build(config: None, ctx: BuildContext) -> DatabaseSecretStore:
    pg = ctx.settings.pg
    warn_if_default_key(pg, embedded=ctx.settings.embedded)
    if ctx.db is None:
        raise StartupError("the database secret store is built without a database")
    store = DatabaseSecretStore(ctx.db, derive_key(pg.pg_encryption_key.get()))
    await store.check_key()
    return store


@hookimpl
def lakekeeper_secret_stores() -> list[BackendSpec[SecretStore, None]]:
    return [BackendSpec(name="postgres", aliases=("database", "sqlite"), factory=_build)]


@hookimpl
def lakekeeper_startup(state: AppState) -> None:
    # The host's Secrets facade (whatever the backend) counts cache hits/misses in the
    # `lakekeeper_cache_requests_total{cache="secrets"}` metric once the metrics exist.
    if state.secrets.metrics is None:
        state.secrets.metrics = state.metrics
