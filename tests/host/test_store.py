"""The store on both engines: migrations, races, downgrade protection, transactions."""

from __future__ import annotations

import asyncio

import pytest

from lakekeeper_host.store import Executor, Store, namespaces, projects, tabulars, warehouses
from lakekeeper_host.store.migrate import (
    MigrationError,
    _statements,
    available_migrations,
    migrate,
    migration_status,
)


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path}/catalog.sqlite"
    url = request.getfixturevalue("pg_url_factory")()
    return url.replace("postgresql://", "postgresql+asyncpg://", 1)


async def rename_project_in_one_statement(db: Executor, project_id: str, name: str) -> None:
    """A catalog write whose SQL the old statement sniffing (a regex for ``UPDATE project`` ...) missed:
    a CTE, the table name quoted. The write says what it touched instead."""
    db.wrote_catalog()
    await db.execute(
        'WITH target AS (SELECT id FROM project WHERE id = :id) UPDATE "project" SET name = :name '
        "WHERE id IN (SELECT id FROM target)",
        {"id": project_id, "name": name},
    )


@pytest.mark.parametrize("rename", [rename_project_in_one_statement, projects.rename_project])
async def test_a_catalog_write_forgets_the_cached_lookups_when_it_commits(store_url, rename):
    store = Store(store_url)
    await store.connect()
    try:
        await migrate(store)
        lookups = store.caches.lookups
        lookups.set_live(True)  # as while the change feed listens; not started: this process's own write must do it
        async with store.transaction() as tx:
            await projects.create_project(tx, "p", "before")
        lookups.put("w", "tabular", "cached", lookups.token("w"))

        async with store.transaction() as tx:  # a transaction that only reads keeps what is cached
            assert await tx.fetch_val("SELECT name FROM project WHERE id = 'p'") == "before"
        assert lookups.get("w", "tabular") == "cached"

        async with store.transaction() as tx:
            await rename(tx, "p", "after")
        assert lookups.get("w", "tabular") is None
        assert await store.fetch_val("SELECT name FROM project WHERE id = 'p'") == "after"
    finally:
        await store.disconnect()


async def test_migrations_are_idempotent_and_complete(store_url):
    store = Store(store_url)
    await store.connect()
    try:
        applied = await migrate(store)
        assert [m.version for m in applied] == [m.version for m in available_migrations(store.dialect)]
        assert await migrate(store) == []
        done, pending = await migration_status(store)
        assert pending == [] and done == [m.version for m in applied]
    finally:
        await store.disconnect()


async def test_postgres_compresses_table_metadata_with_lz4(pg_url_factory):
    """Migration 0008 (a dollar-quoted block, split as one statement) switches the column to lz4."""
    store = Store(pg_url_factory().replace("postgresql://", "postgresql+asyncpg://", 1))
    await store.connect()
    try:
        await migrate(store)
        method = await store.fetch_val(
            "SELECT CAST(a.attcompression AS TEXT) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "WHERE c.relname = 'tabular' AND a.attname = 'metadata'"
        )
        assert method == "l"
    finally:
        await store.disconnect()


def test_statements_keep_dollar_quoted_bodies_whole():
    sql = "-- a comment; with a semicolon\nCREATE TABLE a (x INT);\nDO $$ BEGIN PERFORM 1; END $$;\nSELECT 2"
    assert _statements(sql) == ["CREATE TABLE a (x INT)", "DO $$ BEGIN PERFORM 1; END $$", "SELECT 2"]


async def test_concurrent_migrations_are_safe(store_url):
    """Two processes (here: two pools) racing to migrate both succeed; the schema is applied once."""
    first, second = Store(store_url), Store(store_url)
    await first.connect()
    await second.connect()
    try:
        results = await asyncio.gather(migrate(first), migrate(second))
        assert sorted(len(r) for r in results)[0] == 0
        assert await first.fetch_val("SELECT COUNT(*) FROM lk_migrations") == len(available_migrations(first.dialect))
    finally:
        await first.disconnect()
        await second.disconnect()


async def test_database_newer_than_code_is_refused(store_url):
    store = Store(store_url)
    await store.connect()
    try:
        await migrate(store)
        await store.execute("INSERT INTO lk_migrations (version, name, applied_at) VALUES (9999, 'future', 0)")
        with pytest.raises(MigrationError, match="migrated by a newer lakekeeper-host .*migration 9999"):
            await migration_status(store)
        with pytest.raises(MigrationError):
            await migrate(store)
    finally:
        await store.disconnect()


async def test_failed_transaction_leaves_nothing(store_url):
    store = Store(store_url)
    await store.connect()
    try:
        await migrate(store)
        with pytest.raises(RuntimeError):
            async with store.transaction() as tx:
                await tx.execute("INSERT INTO project (id, name, created_at) VALUES ('p1', 'P', 1)")
                raise RuntimeError("boom")
        assert await store.fetch_val("SELECT COUNT(*) FROM project") == 0
        async with store.transaction() as tx:
            await tx.execute("INSERT INTO project (id, name, created_at) VALUES ('p1', 'P', 1)")
        assert await store.fetch_val("SELECT name FROM project WHERE id = 'p1'") == "P"
    finally:
        await store.disconnect()


async def test_compare_and_swap_reports_the_loser(store_url):
    store = Store(store_url)
    await store.connect()
    try:
        await migrate(store)
        await store.execute("INSERT INTO project (id, name, created_at) VALUES ('p', 'v0', 1)")

        async def swap(new: str) -> bool:
            async with store.transaction() as tx:
                rows = await tx.fetch_all(
                    "UPDATE project SET name = :new WHERE id = 'p' AND name = 'v0' RETURNING id", {"new": new}
                )
            return bool(rows)

        outcomes = await asyncio.gather(*(swap(f"v{i}") for i in range(1, 6)))
        assert sum(outcomes) == 1
    finally:
        await store.disconnect()


async def test_many_tables_and_views_of_a_namespace_are_found_by_name_in_one_lookup(store_url):
    """The batch check's lookup of a schema's worth of names (Trino's FilterTables): names in any
    case, either kind, never a soft-deleted or staged row, nor a namesake in another namespace."""
    store = Store(store_url)
    await store.connect()
    try:
        await migrate(store)
        async with store.transaction() as tx:
            await projects.create_project(tx, "p", "project")
            await warehouses.insert_warehouse(tx, warehouse_id="w", project_id="p", name="lake",
                                              storage_profile={"type": "file"}, storage_secret_id=None,
                                              delete_profile={"type": "hard"})
            for ns_id, parts in (("ns", ["Sales"]), ("other", ["other"])):
                await namespaces.insert_namespace(tx, namespace_id=ns_id, warehouse_id="w", parts=parts,
                                                  parent_id=None, properties={})
            for tabular_id, ns_id, name, typ, staged in (
                ("t1", "ns", "Orders", "table", False), ("v1", "ns", "orders_view", "view", False),
                ("s1", "ns", "staged", "table", True), ("d1", "ns", "dropped", "table", False),
                ("o1", "other", "elsewhere", "table", False),
            ):
                await tabulars.insert_tabular(tx, tabular_id=tabular_id, warehouse_id="w", namespace_id=ns_id,
                                              name=name, typ=typ, location=f"file:///w/{tabular_id}",
                                              metadata_location=None if staged else f"file:///w/{tabular_id}.json",
                                              metadata=None if staged else "{}", staged=staged)
            await tx.execute("UPDATE tabular SET deleted_at = 1 WHERE id = 'd1'")

        names = ["ORDERS", "orders_view", "staged", "dropped", "elsewhere", "missing"]
        found = await tabulars.find_tabulars_by_name(store, "w", ["sales"], names)
        assert {key: (row.id, row.typ) for key, row in found.items()} == {
            "orders": ("t1", "table"), "orders_view": ("v1", "view")
        }
        assert await tabulars.find_tabulars_by_name(store, "w", ["no_such_namespace"], names) == {}
        assert await tabulars.find_tabulars_by_name(store, "w", ["sales"], []) == {}
    finally:
        await store.disconnect()
