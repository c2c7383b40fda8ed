"""Versioned schema migrations for both engines.

Files are ``migrations/NNNN_name.sql``; an engine-specific ``NNNN_name.postgres.sql`` or
``NNNN_name.sqlite.sql`` replaces the shared file for that engine. All pending migrations run
in one transaction under a lock, so two processes racing to migrate are safe.
"""

from __future__ import annotations

import re
from importlib import resources

from attrs import frozen

from lakekeeper_host.store.db import Executor, Store, now_ms

_FILE = re.compile(r"^(\d{4})_([a-z0-9_]+?)(?:\.(sqlite|postgres))?\.sql$")
_LOCK_ID = 0x1A7E_C0DE  # advisory-lock key for migrations


class MigrationError(Exception):
    pass


class DatabaseNewerThanServer(MigrationError):
    """The database carries migrations this server does not know: a newer version migrated it."""

    def __init__(self, unknown: list[int], newest: int):
        versions = ", ".join(f"{v:04d}" for v in unknown)
        super().__init__(
            f"The database was migrated by a newer lakekeeper-host (it has migration {versions}; this server "
            f"knows up to {newest:04d}): run a version at least as new as the one that migrated it, or "
            "`lakekeeper serve --force-start` to start anyway (an emergency rollback, at your own risk)"
        )
        self.unknown = unknown


def _unknown_versions(applied: list[int] | set[int], known: list[Migration]) -> list[int]:
    return sorted(set(applied) - {m.version for m in known})


@frozen
class Migration:
    version: int
    name: str
    sql: str


def available_migrations(dialect: str) -> list[Migration]:
    engine = "postgres" if dialect == "postgresql" else "sqlite"
    chosen: dict[int, tuple[bool, Migration]] = {}
    for entry in resources.files("lakekeeper_host.store").joinpath("migrations").iterdir():
        match = _FILE.match(entry.name)
        if not match:
            continue
        version, name, only = int(match[1]), match[2], match[3]
        if only and only != engine:
            continue
        specific = only is not None
        if version in chosen and chosen[version][0] and not specific:
            continue
        chosen[version] = (specific, Migration(version, name, entry.read_text()))
    return [m for _, (_, m) in sorted(chosen.items())]


def _statements(sql: str) -> list[str]:
    """The statements of a migration file: split at semicolons, except inside ``$$``-quoted bodies."""
    body = "\n".join(line for line in sql.splitlines() if not line.strip().startswith("--"))
    statements, current = [], []
    for index, chunk in enumerate(body.split("$$")):
        if index % 2:  # a dollar-quoted body: kept whole
            current.append(f"$${chunk}$$")
            continue
        *complete, rest = chunk.split(";")
        for piece in complete:
            statements.append("".join([*current, piece]))
            current = []
        current.append(rest)
    statements.append("".join(current))
    return [s.strip() for s in statements if s.strip()]


async def _applied(db: Executor) -> list[int]:
    exists = await db.fetch_val(
        "SELECT COUNT(*) FROM information_schema.tables "
        "WHERE table_name = 'lk_migrations' AND table_schema = current_schema()"
        if db.is_postgres
        else "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'lk_migrations'"
    )
    if not exists:
        return []
    return [r["version"] for r in await db.fetch_all("SELECT version FROM lk_migrations ORDER BY version")]


async def migration_status(store: Store) -> tuple[list[int], list[Migration]]:
    """(applied versions, pending migrations); raises if the database is newer than the code."""
    applied = await _applied(store)
    known = available_migrations(store.dialect)
    if unknown := _unknown_versions(applied, known):
        raise DatabaseNewerThanServer(unknown, known[-1].version if known else 0)
    done = set(applied)
    return applied, [m for m in known if m.version not in done]


async def migrate(store: Store) -> list[Migration]:
    """Apply all pending migrations; idempotent. Returns what was applied."""
    async with store.transaction() as tx:
        if tx.is_postgres:
            await tx.execute(f"SELECT pg_advisory_xact_lock({_LOCK_ID})")
            if store.schema:  # LAKEKEEPER__PG_SCHEMA: every connection's search_path (a checked identifier)
                await tx.execute(f'CREATE SCHEMA IF NOT EXISTS "{store.schema}"')
        await tx.execute(
            "CREATE TABLE IF NOT EXISTS lk_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)"
        )
        # re-read inside the lock: another process may have migrated meanwhile
        applied = set(await _applied(tx))
        known = available_migrations(store.dialect)
        if unknown := _unknown_versions(applied, known):
            raise DatabaseNewerThanServer(unknown, known[-1].version if known else 0)
        pending = [m for m in known if m.version not in applied]
        for migration in pending:
            for statement in _statements(migration.sql):
                await tx.execute(statement)
            await tx.execute(
                "INSERT INTO lk_migrations (version, name, applied_at) VALUES (:v, :n, :t)",
                {"v": migration.version, "n": migration.name, "t": now_ms()},
            )
    return pending
