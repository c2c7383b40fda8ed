"""Crash drill (issue 24): eight PyIceberg writers append while the catalog process is killed with
SIGKILL three times and restarted on the same data dir / database, on embedded SQLite and on
PostgreSQL.

Afterwards: every commit a writer saw acknowledged is in the table history, every metadata file the
catalog references exists, scans succeed and hold exactly the acknowledged rows plus whole
un-acknowledged appends that landed before the kill (see ``drill_support.assert_table_whole``).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from pyiceberg.catalog.rest import RestCatalog

from lakekeeper_testing.server import CatalogServer, create_file_warehouse
from tests.drills.drill_support import (
    SCHEMA,
    TABLE_PROPERTIES,
    WriterLog,
    append_until_done,
    assert_table_whole,
    kill_hard,
    rows,
)

WRITERS = 8
KILLS = 3
TABLES = 2  # writers 0, 2, 4, 6 on one table, 1, 3, 5, 7 on the other: conflicts and crashes together
SECONDS_BETWEEN_KILLS = 4.0
SECONDS_AFTER_LAST_RESTART = 2.0


@pytest.mark.drill_full
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_sigkill_three_times_under_eight_writers_loses_no_acknowledged_commit(backend, pg_url_factory,
                                                                              tmp_path, capsys):
    crash_drill(backend, KILLS, SECONDS_BETWEEN_KILLS, pg_url_factory, tmp_path, capsys)


@pytest.mark.drill_subset
def test_quick_sigkill_once_under_eight_writers_on_sqlite(pg_url_factory, tmp_path, capsys):
    """The drill's quick form for the fast suite: one kill, embedded SQLite; it kills as soon as the
    writers acknowledged WRITERS commits and stops once they acknowledged WRITERS more after the
    restart, instead of waiting out fixed seconds."""
    crash_drill("sqlite", 1, 0.0, pg_url_factory, tmp_path, capsys, commits_between_kills=WRITERS)


def acknowledged_commits(logs: list[WriterLog]) -> int:
    return sum(len(log.acknowledged) for log in logs)


def wait_for_commits(logs: list[WriterLog], count: int, timeout: float = 60) -> None:
    """Until the writers acknowledged ``count`` more commits (they keep committing through a crash)."""
    target = acknowledged_commits(logs) + count
    deadline = time.monotonic() + timeout
    while acknowledged_commits(logs) < target:
        assert time.monotonic() < deadline, f"the writers acknowledged fewer than {count} commits in {timeout}s"
        time.sleep(0.05)


def crash_drill(backend: str, kills: int, seconds_between_kills: float, pg_url_factory, tmp_path, capsys, *,
                commits_between_kills: int | None = None) -> None:
    """Kill ``kills`` times, ``seconds_between_kills`` apart, or each time the writers acknowledged
    ``commits_between_kills`` more commits (then also that many after the last restart)."""
    env = {}
    if backend == "postgres":
        url = pg_url_factory()
        env = {"LAKEKEEPER__PG_DATABASE_URL_WRITE": url, "LAKEKEEPER__PG_DATABASE_URL_READ": url}
    server = CatalogServer(env, data_dir=str(tmp_path / "server"))
    (tmp_path / "server").mkdir()
    server.start()
    try:
        if backend == "postgres":
            import httpx

            httpx.post(server.url + "/management/v1/bootstrap", json={"accept-terms-of-use": True}, timeout=30)
        warehouse = f"wh-{uuid.uuid4().hex[:8]}"
        create_file_warehouse(server.url, warehouse, str(tmp_path / "warehouse"))
        catalog = RestCatalog("drill", uri=server.catalog_url, warehouse=warehouse)
        catalog.create_namespace("drill")
        for number in range(TABLES):
            table = catalog.create_table(f"drill.t{number}", SCHEMA, properties=TABLE_PROPERTIES)
            table.append(rows([-1 - number], "seed"))

        def new_catalog() -> RestCatalog:
            return RestCatalog("writer", uri=server.catalog_url, warehouse=warehouse)

        logs = [WriterLog(f"w{n}") for n in range(WRITERS)]
        stop = threading.Event()
        errors: list[BaseException] = []

        def writer(number: int) -> None:
            try:
                append_until_done(new_catalog, f"drill.t{number % TABLES}", logs[number], first_id=number * 10**7,
                                  batch_size=3, stop=stop)
            except BaseException as error:  # reported below, with the drill's numbers
                errors.append(error)

        threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(WRITERS)]
        for thread in threads:
            thread.start()
        restarts = []
        for _ in range(kills):
            if commits_between_kills is None:
                time.sleep(seconds_between_kills)
            else:
                wait_for_commits(logs, commits_between_kills)
            kill_hard(server)
            began = time.monotonic()
            server.start(timeout=60)
            restarts.append(time.monotonic() - began)
        if commits_between_kills is None:
            time.sleep(SECONDS_AFTER_LAST_RESTART)
        else:
            wait_for_commits(logs, commits_between_kills)
        stop.set()
        for thread in threads:
            thread.join(60)
        assert not errors, errors
        assert all(not thread.is_alive() for thread in threads)

        catalog = RestCatalog("check", uri=server.catalog_url, warehouse=warehouse)
        results = []
        for number in range(TABLES):
            mine = [log for n, log in enumerate(logs) if n % TABLES == number]
            results.append(assert_table_whole(catalog, server.catalog_url, warehouse, "drill", f"t{number}", mine,
                                              initial_ids={-1 - number}))
        server_errors = [e for log in logs for e in log.server_errors]
        with capsys.disabled():
            print(f"\n[crash drill {backend}, {kills} kills] restarts {[round(r, 2) for r in restarts]} s; "
                  f"per table {results}; "
                  f"server errors seen by clients: {len(server_errors)} {server_errors[:3]}")
        # writers kept committing between the kills (the drill really exercised something)
        assert sum(r["acknowledged_commits"] for r in results) >= WRITERS
        # the server only ever answered with ErrorModels a client can act on -- never a 500
        assert not [e for e in server_errors if "500" in e or "Internal" in e], server_errors
    finally:
        server.close()
