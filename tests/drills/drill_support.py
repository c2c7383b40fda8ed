"""What the crash, outage and replica drills share: a killable catalog server, PyIceberg writers
that retry like a careful client and record what the catalog acknowledged, and the checks run on
a table afterwards (acknowledged commits present, referenced metadata files present, scans whole).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import pyarrow as pa
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import CommitFailedException, NoSuchTableError
from pyiceberg.schema import Schema
from pyiceberg.types import LongType, NestedField, StringType

from lakekeeper_testing.server import CatalogServer

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "writer", StringType(), required=False),
)
ARROW_SCHEMA = pa.schema([("id", pa.int64()), ("writer", pa.string())])
# PyIceberg's own commit retries are off: every 409 and every lost connection reaches the writer,
# which knows whether the attempt may have landed
TABLE_PROPERTIES = {"format-version": "2", "commit.retry.num-retries": "0"}


def kill_hard(server: CatalogServer) -> None:
    """SIGKILL the whole server process group: no shutdown code runs, open requests are cut."""
    assert server.process is not None
    os.killpg(server.process.pid, signal.SIGKILL)
    server.process.wait(10)
    server.process = None


def rows(ids: list[int], writer: str) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "writer": pa.array([writer] * len(ids))}, schema=ARROW_SCHEMA)


@dataclass
class WriterLog:
    """What one writer knows: ids of appends the catalog acknowledged (with the snapshot id its
    answer carried), ids whose outcome is unknown (the connection broke during the commit), and
    how often each kind of failure happened."""

    name: str
    acknowledged: dict[int, list[int]] = field(default_factory=dict)  # snapshot id -> row ids
    unknown: list[list[int]] = field(default_factory=list)
    conflicts: int = 0
    connection_errors: int = 0
    server_errors: list[str] = field(default_factory=list)

    @property
    def acknowledged_ids(self) -> set[int]:
        return {i for ids in self.acknowledged.values() for i in ids}

    @property
    def unknown_ids(self) -> set[int]:
        return {i for ids in self.unknown for i in ids}


def _is_connection_error(error: BaseException) -> bool:
    import requests

    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, (requests.ConnectionError, requests.exceptions.ChunkedEncodingError, ConnectionError,
                             requests.Timeout)):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def append_until_done(catalog_factory: Callable[[], RestCatalog], identifier: str, log: WriterLog,
                      first_id: int, batch_size: int, stop: threading.Event, *, max_appends: int | None = None,
                      pause: float = 0.0) -> None:
    """Append batches of fresh ids until ``stop`` (or ``max_appends`` acknowledged), retrying on
    409 (reload) and on lost connections / 5xx (new catalog client, reload). Every attempt uses
    new ids, so afterwards each row says which attempt wrote it."""
    next_id = first_id
    catalog, table = None, None
    while not stop.is_set() and (max_appends is None or len(log.acknowledged) < max_appends):
        try:
            if table is None:
                catalog = catalog or catalog_factory()
                table = catalog.load_table(identifier)
        except NoSuchTableError:
            raise
        except Exception as error:  # the server is away (or answers 503): wait and reconnect
            if _is_connection_error(error):
                log.connection_errors += 1
            else:
                log.server_errors.append(f"load: {type(error).__name__}: {error}")
            catalog, table = None, None
            time.sleep(0.05)
            continue
        ids = list(range(next_id, next_id + batch_size))
        next_id += batch_size
        try:
            table.append(rows(ids, log.name))
        except CommitFailedException:
            log.conflicts += 1
            table = None
            continue
        except NoSuchTableError:
            raise
        except Exception as error:
            # the commit request may or may not have reached the database
            if _is_connection_error(error):
                log.connection_errors += 1
            else:
                log.server_errors.append(f"{type(error).__name__}: {error}")
            log.unknown.append(ids)
            catalog, table = None, None
            time.sleep(0.05)
            continue
        log.acknowledged[table.metadata.current_snapshot_id] = ids
        if pause:
            time.sleep(pause)


def load_table_json(catalog_url: str, warehouse: str, namespace: str, table: str) -> dict:
    """The raw loadTable answer (metadata-location and metadata as the catalog has them)."""
    config = httpx.get(f"{catalog_url}/v1/config", params={"warehouse": warehouse}, timeout=30).json()
    prefix = {**config["defaults"], **config["overrides"]}["prefix"]
    response = httpx.get(f"{catalog_url}/v1/{prefix}/namespaces/{namespace}/tables/{table}", timeout=30)
    response.raise_for_status()
    return response.json()


def local_path(location: str) -> str:
    parsed = urllib.parse.urlsplit(location)
    assert parsed.scheme in ("file", ""), location
    return urllib.parse.unquote(parsed.path)


def assert_table_whole(catalog: RestCatalog, catalog_url: str, warehouse: str, namespace: str, name: str,
                       logs: list[WriterLog], initial_ids: set[int] = frozenset()) -> dict:
    """The checks after a drill; returns counts for the report."""
    loaded = load_table_json(catalog_url, warehouse, namespace, name)
    metadata = loaded["metadata"]
    referenced = [loaded["metadata-location"]] + [entry["metadata-file"] for entry in metadata.get("metadata-log", [])]
    missing = [location for location in referenced if not os.path.exists(local_path(location))]
    assert not missing, f"metadata files the catalog references are missing: {missing}"

    table = catalog.load_table(f"{namespace}.{name}")
    history = {snapshot.snapshot_id for snapshot in table.snapshots()}
    for log in logs:
        lost = set(log.acknowledged) - history
        assert not lost, f"{log.name}: acknowledged snapshots missing from the table history: {lost}"
    # a linear history: every snapshot's parent is in the table (nothing half-applied)
    for snapshot in table.snapshots():
        assert snapshot.parent_snapshot_id is None or snapshot.parent_snapshot_id in history
    read = table.scan().to_arrow()
    ids = read["id"].to_pylist()
    assert len(ids) == len(set(ids)), "a row was written twice"
    found = set(ids) - set(initial_ids)
    acknowledged = set().union(*(log.acknowledged_ids for log in logs))
    unknown = set().union(*(log.unknown_ids for log in logs))
    assert acknowledged <= found, f"acknowledged rows lost: {sorted(acknowledged - found)[:20]}"
    assert found <= acknowledged | unknown, f"rows nobody wrote: {sorted(found - acknowledged - unknown)[:20]}"
    # an un-acknowledged attempt landed whole or not at all
    for log in logs:
        for attempt in log.unknown:
            present = set(attempt) & found
            assert not present or present == set(attempt), f"{log.name}: half an append landed: {attempt}"
    total_records = int(table.current_snapshot().summary["total-records"]) if table.current_snapshot() else 0
    assert total_records == len(ids)
    return {
        "acknowledged_commits": sum(len(log.acknowledged) for log in logs),
        "unknown_attempts": sum(len(log.unknown) for log in logs),
        "unknown_landed": sum(1 for log in logs for attempt in log.unknown if set(attempt) & found),
        "conflicts": sum(log.conflicts for log in logs),
        "connection_errors": sum(log.connection_errors for log in logs),
        "snapshots": len(history),
        "metadata_files_checked": len(referenced),
        "rows": len(ids),
    }
