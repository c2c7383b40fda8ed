"""Operator tasks on the built-in secret store: rotating ``LAKEKEEPER__PG_ENCRYPTION_KEY``.

Rotation re-encrypts every row of the ``secret`` table in ONE transaction: either all secrets
move to the new key or none does. Afterwards the old key opens nothing, so every server must be
restarted with the new key (a server still holding the old one refuses to start).
Run it while the servers are stopped or in read-only maintenance mode: a server with the old
key that writes a secret after the rotation leaves that one row under the old key (running the
rotation again with the old key configured moves it; rows already under the new key are skipped).
"""

from __future__ import annotations

import logging

from attrs import frozen

from lakekeeper_host.builtins.secrets_database import DatabaseSecretStore, derive_key
from lakekeeper_host.config import Settings
from lakekeeper_host.config.model import UNSAFE_ENCRYPTION_KEY
from lakekeeper_host.store import Store

log = logging.getLogger(__name__)

# long enough that scrypt's work factor is not the only thing between an attacker and the key
MIN_KEY_LENGTH = 16


class KeyRotationError(Exception):
    """The rotation was refused or failed; nothing was changed."""


@frozen
class KeyRotation:
    resealed: int
    already_current: int


async def rotate_encryption_key(store: Store, settings: Settings, new_passphrase: str) -> KeyRotation:
    # ------------------------------------------------ VALIDATIONS
    new_passphrase = new_passphrase.strip()
    old_passphrase = settings.pg.pg_encryption_key.get()
    if not new_passphrase:
        raise KeyRotationError("the new key is empty")
    if new_passphrase == UNSAFE_ENCRYPTION_KEY:
        raise KeyRotationError("the new key is the publicly known default key")
    if len(new_passphrase) < MIN_KEY_LENGTH:
        raise KeyRotationError(f"the new key is shorter than {MIN_KEY_LENGTH} characters")
    if new_passphrase == old_passphrase:
        raise KeyRotationError("the new key equals the configured LAKEKEEPER__PG_ENCRYPTION_KEY")

    # ------------------------------------------------ BUSINESS LOGIC
    old_key, new_key = derive_key(old_passphrase), derive_key(new_passphrase)
    async with store.transaction() as tx:
        result = await DatabaseSecretStore(tx, old_key).reseal_all(new_key)
    log.info(
        "re-encrypted %d secret(s) under the new key (%d already under it)",
        result.resealed,
        result.already_current,
    )
    return KeyRotation(resealed=result.resealed, already_current=result.already_current)
