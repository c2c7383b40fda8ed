"""The ``secret`` table of the built-in database secret store: sealed ciphertexts by id."""

from __future__ import annotations

from lakekeeper_host.ids import now_ms
from lakekeeper_host.store.db import Executor, Row


async def insert_secret(db: Executor, secret_id: str, ciphertext: str) -> None:
    await db.execute(
        "INSERT INTO secret (id, ciphertext, created_at) VALUES (:id, :c, :t)",
        {"id": secret_id, "c": ciphertext, "t": now_ms()},
    )


async def get_ciphertext(db: Executor, secret_id: str) -> str | None:
    row = await db.fetch_one("SELECT ciphertext FROM secret WHERE id = :id", {"id": secret_id})
    return None if row is None else row["ciphertext"]


async def delete_secret(db: Executor, secret_id: str) -> None:
    await db.execute("DELETE FROM secret WHERE id = :id", {"id": secret_id})


async def newest_secret(db: Executor) -> Row | None:
    """``id`` and ``ciphertext`` of the most recently written secret."""
    return await db.fetch_one("SELECT id, ciphertext FROM secret ORDER BY created_at DESC, id DESC LIMIT 1")


async def all_secrets(db: Executor) -> list[Row]:
    return await db.fetch_all("SELECT id, ciphertext FROM secret ORDER BY id")


async def update_ciphertext(db: Executor, secret_id: str, ciphertext: str) -> None:
    await db.execute(
        "UPDATE secret SET ciphertext = :c, updated_at = :t WHERE id = :id",
        {"id": secret_id, "c": ciphertext, "t": now_ms()},
    )


async def lock_for_rewrite(db: Executor) -> None:
    """Inside a transaction: SQLite already holds the write lock (BEGIN IMMEDIATE); PostgreSQL blocks
    concurrent inserts/updates/deletes until commit but lets readers continue."""
    if db.is_postgres:
        await db.execute("LOCK TABLE secret IN SHARE ROW EXCLUSIVE MODE")
