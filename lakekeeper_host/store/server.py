"""The singleton server row: server id and bootstrap state."""

from __future__ import annotations

from attrs import frozen

from lakekeeper_host.store.db import Executor, new_id, now_ms


@frozen
class ServerRow:
    server_id: str
    bootstrapped_at: int | None
    terms_accepted: bool

    @property
    def bootstrapped(self) -> bool:
        return self.bootstrapped_at is not None


async def get_or_create_server(db: Executor) -> ServerRow:
    row = await db.fetch_one("SELECT * FROM lk_server WHERE singleton = 1")
    if row is None:
        await db.execute(
            "INSERT INTO lk_server (singleton, server_id, terms_accepted, created_at) "
            "VALUES (1, :id, :f, :t) ON CONFLICT (singleton) DO NOTHING",
            {"id": new_id(), "f": False, "t": now_ms()},
        )
        row = await db.fetch_one("SELECT * FROM lk_server WHERE singleton = 1")
    return ServerRow(row["server_id"], row["bootstrapped_at"], bool(row["terms_accepted"]))


async def mark_bootstrapped(db: Executor) -> bool:
    """Set the bootstrap flag once; False if it was already set (a concurrent bootstrap won)."""
    rows = await db.fetch_all(
        "UPDATE lk_server SET bootstrapped_at = :t, terms_accepted = :yes "
        "WHERE singleton = 1 AND bootstrapped_at IS NULL RETURNING server_id",
        {"t": now_ms(), "yes": True},
    )
    return bool(rows)


async def reopen_for_bootstrap(db: Executor) -> str:
    """Clear the bootstrap flag (``lakekeeper reopen-bootstrap``); the server id stays. Returns it."""
    server = await get_or_create_server(db)
    await db.execute("UPDATE lk_server SET bootstrapped_at = NULL WHERE singleton = 1")
    return server.server_id
