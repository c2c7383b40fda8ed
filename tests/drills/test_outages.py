"""Outage drills (issue 24): a dependency goes away under load and comes back; the catalog answers
clear 503 ErrorModels meanwhile and recovers without a restart.

Here: PostgreSQL restarted mid-load (its own throwaway cluster, so the drill may stop it). The other
outages have their drills next to the code they exercise (see docs/drills.md, "Outages"):

* event broker down -- tests/events/test_end_to_end.py::test_broker_outage_during_a_commit_burst_loses_nothing
  (NATS JetStream) and plugins/events-kafka/tests/test_server_outage.py (Kafka);
* secret store down -- plugins/secrets-vault/tests/test_server_warehouses.py::
  test_openbao_restarted_mid_test_the_next_request_succeeds and test_vault_store.py::
  test_an_outage_is_a_503_without_secrets_and_the_store_recovers;
* identity provider / JWKS down -- tests/auth/test_authentication.py::
  test_identity_provider_outage_keeps_cached_keys_refuses_unknown_ones_and_recovers and
  test_unknown_key_ids_refetch_the_jwks_at_most_once_per_window.
"""

from __future__ import annotations

import collections
import contextlib
import datetime
import json
import threading
import time
import uuid

import httpx
import pytest
from pyiceberg.catalog.rest import RestCatalog

from lakekeeper_testing.server import CatalogServer, create_file_warehouse
from lakekeeper_testing.services import PostgresServer, serving
from tests.drills.drill_support import (
    SCHEMA,
    TABLE_PROPERTIES,
    WriterLog,
    append_until_done,
    assert_table_whole,
    rows,
)

WRITERS = 4
READERS = 2
OUTAGE_SECONDS = 3.0


def _log_records(server: CatalogServer) -> list[dict]:
    records = []
    for line in server.log_path.read_text(errors="replace").splitlines():
        with contextlib.suppress(ValueError):
            records.append(json.loads(line))
    return [r for r in records if isinstance(r, dict) and "message" in r and "timestamp" in r]


def _epoch(timestamp: str) -> float:
    return datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


@pytest.fixture
def own_postgres():
    """A PostgreSQL cluster of this test alone: it is stopped and started under the catalog."""
    with serving(PostgresServer()) as server:
        yield server


def test_postgres_restart_mid_load_is_503_then_recovers_without_restarting_the_catalog(
    own_postgres, tmp_path, capsys, lakekeeper_server_factory
):
    url = own_postgres.create_database("outage_drill")
    with lakekeeper_server_factory(pg_url=url) as server:
        warehouse = f"wh-{uuid.uuid4().hex[:8]}"
        warehouse_id = create_file_warehouse(server.url, warehouse, str(tmp_path / "warehouse"))
        catalog = RestCatalog("drill", uri=server.catalog_url, warehouse=warehouse)
        catalog.create_namespace("drill")
        catalog.create_table("drill.t", SCHEMA, properties=TABLE_PROPERTIES).append(rows([-1], "seed"))
        catalog_pid = server.process.pid

        stop = threading.Event()
        logs = [WriterLog(f"w{n}") for n in range(WRITERS)]
        answers: list[tuple[float, int, str | None, str]] = []  # (time, status, ErrorModel type, path) of every read
        failures: list[BaseException] = []

        def writer(number: int) -> None:
            try:
                append_until_done(lambda: RestCatalog("w", uri=server.catalog_url, warehouse=warehouse), "drill.t",
                                  logs[number], first_id=number * 10**7, batch_size=2, stop=stop, pause=0.05)
            except BaseException as error:
                failures.append(error)

        def reader() -> None:
            paths = [f"/catalog/v1/{warehouse_id}/namespaces/drill/tables/t", f"/catalog/v1/{warehouse_id}/namespaces",
                     "/management/v1/warehouse"]
            with httpx.Client(base_url=server.url, timeout=30) as client:
                while not stop.is_set():
                    for path in paths:
                        response = client.get(path)
                        error_type = None
                        if response.status_code >= 400:
                            error_type = response.json()["error"]["type"]  # always an ErrorModel
                        answers.append((time.monotonic(), response.status_code, error_type, path))
                    time.sleep(0.02)

        threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(WRITERS)]
        threads += [threading.Thread(target=reader, daemon=True) for _ in range(READERS)]
        for thread in threads:
            thread.start()
        time.sleep(2)
        acknowledged_before = sum(len(log.acknowledged) for log in logs)
        own_postgres.stop()
        stopped_at = time.monotonic()
        time.sleep(OUTAGE_SECONDS)
        restarting_at = time.monotonic()
        own_postgres.start()  # returns once PostgreSQL accepts queries (pg_isready)
        started_at, started_wall = time.monotonic(), time.time()
        time.sleep(4)
        stop.set()
        for thread in threads:
            thread.join(60)
        assert not failures, failures

        kinds = collections.Counter((status, error_type) for _, status, error_type, _ in answers)
        # during the outage: 503 DatabaseUnavailable, never a 500 or another error
        assert set(kinds) <= {(200, None), (503, "DatabaseUnavailable")}, kinds
        during = [a for a in answers if stopped_at + 0.5 < a[0] < restarting_at]
        assert during and all(a[1] == 503 for a in during), [(round(a[0] - stopped_at, 3),) + a[1:] for a in during
                                                             if a[1] != 503]
        # after: the same catalog process answers again, without a restart
        recovered = [a[0] for a in answers if a[0] > restarting_at and a[1] == 200]
        assert recovered, "no successful read after PostgreSQL came back"
        recovery_seconds = max(min(recovered) - started_at, 0.0)
        assert recovery_seconds < 5
        assert server.process.pid == catalog_pid and server.process.poll() is None
        assert httpx.get(server.url + "/health", timeout=30).status_code == 200
        # the task-queue pollers recover too (they retry every 5 s): none still fails 6 s after
        time.sleep(max(0.0, started_at + 8 - time.monotonic()))
        late = [line for line in _log_records(server) if "polling queue" in line["message"]
                and _epoch(line["timestamp"]) > started_wall + 6]
        assert not late, late[:2]

        # writers: commits during the outage failed with 503 or "state unknown", never a plain 500
        writer_errors = [e for log in logs for e in log.server_errors]
        assert all(("ServiceUnavailable" in e or "CommitStateUnknown" in e) for e in writer_errors), writer_errors
        acknowledged_after = sum(len(log.acknowledged) for log in logs) - acknowledged_before
        result = assert_table_whole(RestCatalog("check", uri=server.catalog_url, warehouse=warehouse),
                                    server.catalog_url, warehouse, "drill", "t", logs, initial_ids={-1})
        assert acknowledged_after > 0
        with capsys.disabled():
            print(f"\n[postgres outage drill] outage {started_at - stopped_at:.1f} s (start took "
                  f"{started_at - restarting_at:.1f} s); reads {dict(kinds)}; "
                  f"first successful read {recovery_seconds * 1000:.0f} ms after PostgreSQL was back; "
                  f"writer errors {collections.Counter(e.split(':')[0] for e in writer_errors)}; table {result}")
