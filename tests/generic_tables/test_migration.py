"""Migration 0013 on a database that already holds tables, on SQLite and PostgreSQL: the existing rows
(and the rows that reference them) stay, ``tabular.typ`` accepts ``generic_table`` and nothing else
new, and a ``generic_table`` row goes with its tabular."""

from __future__ import annotations

import pytest

from lakekeeper_host.store.db import Store
from lakekeeper_host.store.migrate import available_migrations, migrate

GENERIC_TABLES = 13


async def _apply(store: Store, below: int) -> None:
    """Apply the migrations before ``below`` only (the database of an older server)."""
    import lakekeeper_host.store.migrate as migrate_module

    older = [m for m in available_migrations(store.dialect) if m.version < below]
    original = migrate_module.available_migrations
    migrate_module.available_migrations = lambda dialect: older
    try:
        await migrate(store)
    finally:
        migrate_module.available_migrations = original


@pytest.fixture(params=["sqlite", "postgres"])
async def store(request, tmp_path):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/catalog.sqlite"
    else:
        url = request.getfixturevalue("pg_url_factory")().replace("postgresql://", "postgresql+asyncpg://", 1)
    db = Store(url)
    await db.connect()
    yield db
    await db.disconnect()


async def test_an_existing_catalog_migrates_and_takes_generic_tables(store):
    await _apply(store, GENERIC_TABLES)
    async with store.transaction() as tx:
        await tx.execute("INSERT INTO project (id, name, created_at) VALUES ('p', 'p', 1)")
        await tx.execute("INSERT INTO warehouse (id, project_id, name, name_key, storage_profile, delete_profile, "
                         "created_at) VALUES ('w', 'p', 'w', 'w', '{}', '{}', 1)")
        await tx.execute("INSERT INTO namespace (id, warehouse_id, name, name_key, created_at) "
                         "VALUES ('n', 'w', 'n', 'n', 1)")
        await tx.execute("INSERT INTO tabular (id, warehouse_id, namespace_id, name, name_key, typ, location, "
                         "metadata_location, metadata, created_at) "
                         "VALUES ('t', 'w', 'n', 'Orders', 'orders', 'table', 's3://b/t', 's3://b/t/m.json', '{}', 1)")
        await tx.execute("INSERT INTO table_maintenance_policy (table_id, warehouse_id, policy, updated_at) "
                         "VALUES ('t', 'w', '{\"keep\": 3}', 1)")

    applied = await migrate(store)
    assert [m.version for m in applied] == [m.version for m in available_migrations(store.dialect)
                                            if m.version >= GENERIC_TABLES]
    row = await store.fetch_one("SELECT name, typ, metadata_location FROM tabular WHERE id = 't'")
    assert dict(row) == {"name": "Orders", "typ": "table", "metadata_location": "s3://b/t/m.json"}
    assert await store.fetch_val("SELECT policy FROM table_maintenance_policy WHERE table_id = 't'") == '{"keep": 3}'

    async with store.transaction() as tx:
        await tx.execute("INSERT INTO tabular (id, warehouse_id, namespace_id, name, name_key, typ, location, "
                         "created_at) VALUES ('g', 'w', 'n', 'frames', 'frames', 'generic_table', 's3://b/g', 1)")
        await tx.execute("INSERT INTO generic_table (id, warehouse_id, format, created_at) "
                         "VALUES ('g', 'w', 'lance', 1)")
    with pytest.raises(Exception, match="(?i)check"):
        async with store.transaction() as tx:
            await tx.execute("INSERT INTO tabular (id, warehouse_id, namespace_id, name, name_key, typ, location, "
                             "created_at) VALUES ('x', 'w', 'n', 'x', 'x', 'materialized_view', 's3://b/x', 1)")
    with pytest.raises(Exception, match="(?i)unique|duplicate"):  # one name space for every kind
        async with store.transaction() as tx:
            await tx.execute("INSERT INTO tabular (id, warehouse_id, namespace_id, name, name_key, typ, location, "
                             "created_at) VALUES ('y', 'w', 'n', 'ORDERS', 'orders', 'generic_table', 's3://b/y', 1)")
    async with store.transaction() as tx:
        await tx.execute("DELETE FROM tabular WHERE id = 'g'")
    assert await store.fetch_val("SELECT COUNT(*) FROM generic_table") == 0
    assert await migrate(store) == []  # idempotent
