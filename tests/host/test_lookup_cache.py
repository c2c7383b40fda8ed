"""loadTable lookups cached while PostgreSQL's change feed reports every change (store/changes.py).

Two server processes share one database, as replicas behind a load balancer do: what one changes,
the other must serve once the change is announced, and what a process changes itself it must serve
at once. Losing the feed connection must not leave stale entries behind.
"""

from __future__ import annotations

import time
import uuid

import httpx
import psycopg
import pytest

from lakekeeper_host.store.cache import LookupCache
from lakekeeper_host.store.changes import APPLICATION_NAME
from lakekeeper_testing.server import create_file_warehouse

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}


def test_nothing_is_cached_without_a_live_feed():
    cache = LookupCache()
    assert cache.token("w") is None
    cache.put("w", "k", "value", cache.token("w"))
    assert cache.get("w", "k") is None
    cache.set_live(True)
    cache.put("w", "k", "value", cache.token("w"))
    assert cache.get("w", "k") == "value"
    cache.set_live(False)
    assert cache.get("w", "k") is None


def test_a_change_announced_during_a_read_keeps_the_older_result_out():
    cache = LookupCache()
    cache.set_live(True)
    token = cache.token("w")  # a reader starts its query ...
    cache.changed("w")  # ... a commit elsewhere is announced while it runs ...
    cache.put("w", "k", "old row", token)  # ... and what it read may predate the commit
    assert cache.get("w", "k") is None
    cache.put("w", "k", "new row", cache.token("w"))
    cache.changed("other-warehouse")
    assert cache.get("w", "k") == "new row"
    cache.changed("w")
    assert cache.get("w", "k") is None
    cache.put("w", "k", "newer row", cache.token("w"))
    cache.changed_everything()  # a write transaction of this process ended
    assert cache.get("w", "k") is None


def _metric(server, series: str) -> float:
    """A series' value (``name`` or ``name{labels}`` exactly as exposed); 0 when absent."""
    text = httpx.get(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10).text
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _property(prefix: str, key: str) -> str | None:
    response = httpx.get(f"{prefix}/namespaces/ns/tables/t", timeout=30)
    if response.status_code == 404:
        return "<gone>"
    response.raise_for_status()
    return response.json()["metadata"].get("properties", {}).get(key)


def _eventually(probe, expected, seconds: float = 15.0):
    deadline = time.monotonic() + seconds
    while (value := probe()) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    return value


def _set_property(prefix: str, key: str, value: str) -> None:
    response = httpx.post(f"{prefix}/namespaces/ns/tables/t", timeout=30,
                          json={"updates": [{"action": "set-properties", "updates": {key: value}}]})
    response.raise_for_status()


@pytest.mark.postgres
def test_replicas_serve_each_others_changes(pg_url_factory, lakekeeper_server_factory, tmp_path):
    url = pg_url_factory()
    first = lakekeeper_server_factory(pg_url=url)
    second = lakekeeper_server_factory(pg_url=url, bootstrap=False)
    try:
        wid = create_file_warehouse(first.url, f"feed-{uuid.uuid4().hex[:8]}", str(tmp_path))
        a, b = f"{first.url}/catalog/v1/{wid}", f"{second.url}/catalog/v1/{wid}"
        httpx.post(f"{a}/namespaces", json={"namespace": ["ns"]}, timeout=30).raise_for_status()
        httpx.post(f"{a}/namespaces/ns/tables", json={"name": "t", "schema": SCHEMA}, timeout=30).raise_for_status()
        assert _metric(first, "lakekeeper_change_feed_listening") == 1

        # loads are served from the cache once looked up
        hits = 'lakekeeper_cache_requests_total{cache="tabular-lookup",result="hit"}'
        before = _metric(first, hits)
        for _ in range(3):
            assert _property(a, "k") is None
        assert _metric(first, hits) >= before + 2

        # a process's own commit is served by its next load, at once
        _set_property(a, "k", "from-a")
        assert _property(a, "k") == "from-a"

        # the other replica's commit is served once announced
        _set_property(b, "k", "from-b")
        assert _eventually(lambda: _property(a, "k"), "from-b") == "from-b"
        assert _property(b, "k") == "from-b"

        # losing the feed empties the cache; it reconnects and caching resumes correctly
        with psycopg.connect(url.replace("+asyncpg", ""), autocommit=True) as conn:
            killed = conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                  "WHERE application_name = %s AND datname = current_database()",
                                  (APPLICATION_NAME,)).fetchone()[0]
        assert killed == 2
        _set_property(b, "k", "while-a-reconnects")
        assert _eventually(lambda: _property(a, "k"), "while-a-reconnects") == "while-a-reconnects"
        assert _eventually(lambda: _metric(first, "lakekeeper_change_feed_listening"), 1.0) == 1.0
        _property(a, "k")  # cached again
        _set_property(b, "k", "after-reconnect")
        assert _eventually(lambda: _property(a, "k"), "after-reconnect") == "after-reconnect"

        # a drop elsewhere is a 404 here
        assert httpx.delete(f"{b}/namespaces/ns/tables/t", timeout=30).status_code == 204
        assert _eventually(lambda: _property(a, "k"), "<gone>") == "<gone>"
    finally:
        first.close()
        second.close()
