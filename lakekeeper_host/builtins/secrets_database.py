"""Built-in secret store ``postgres``: secrets encrypted in the catalog database.

The same backend serves SQLite. Values are sealed with AES-256-GCM under a key derived from
``LAKEKEEPER__PG_ENCRYPTION_KEY`` (scrypt); the row holds only nonce + ciphertext.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec, BuildContext
from lakekeeper_host.store import Executor, now_ms

log = logging.getLogger(__name__)
_FORMAT = "v1"
_SALT = b"lakekeeper-host/secret-store/v1"


class SecretDecryptionError(Exception):
    """The stored secret cannot be opened with the configured key."""


def derive_key(passphrase: str) -> bytes:
    return hashlib.scrypt(passphrase.encode(), salt=_SALT, n=2**14, r=8, p=1, dklen=32)


def seal(key: bytes, secret_id: str, value: dict[str, Any]) -> str:
    nonce = os.urandom(12)
    ciphertext = AESGCM(key).encrypt(nonce, json.dumps(value).encode(), secret_id.encode())
    return f"{_FORMAT}:" + base64.b64encode(nonce + ciphertext).decode()


def open_sealed(key: bytes, secret_id: str, sealed: str) -> dict[str, Any]:
    version, _, payload = sealed.partition(":")
    if version != _FORMAT:
        raise SecretDecryptionError(f"unknown secret format {version!r}")
    raw = base64.b64decode(payload)
    try:
        plain = AESGCM(key).decrypt(raw[:12], raw[12:], secret_id.encode())
    except InvalidTag:
        raise SecretDecryptionError(
            "secret cannot be decrypted with the configured LAKEKEEPER__PG_ENCRYPTION_KEY"
        ) from None
    return json.loads(plain)


class DatabaseSecretStore:
    name = "postgres"

    def __init__(self, db: Executor, key: bytes):
        self.db = db
        self._key = key

    async def create_impl(self, secret_id: str, value: dict[str, Any]) -> None:
        await self.db.execute(
            "INSERT INTO secret (id, ciphertext, created_at) VALUES (:id, :c, :t)",
            {"id": secret_id, "c": seal(self._key, secret_id, value), "t": now_ms()},
        )

    async def get_impl(self, secret_id: str) -> dict[str, Any] | None:
        row = await self.db.fetch_one("SELECT ciphertext FROM secret WHERE id = :id", {"id": secret_id})
        return None if row is None else open_sealed(self._key, secret_id, row["ciphertext"])

    async def delete_impl(self, secret_id: str) -> None:
        await self.db.execute("DELETE FROM secret WHERE id = :id", {"id": secret_id})

    async def health(self) -> bool:
        return True

    async def close(self) -> None:
        return None


async def _build(config: None, ctx: BuildContext) -> DatabaseSecretStore:
    pg = ctx.settings.pg
    if pg.encryption_key_is_default:
        log.warning(
            "THIS IS UNSAFE! LAKEKEEPER__PG_ENCRYPTION_KEY is not set: secrets are encrypted "
            "with the publicly known default key. Set a long random key before storing real credentials."
        )
    return DatabaseSecretStore(ctx.db, derive_key(pg.pg_encryption_key.get()))


@hookimpl
def lakekeeper_secret_stores():
    return [BackendSpec(name="postgres", aliases=("database", "sqlite"), factory=_build)]
