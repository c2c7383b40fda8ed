"""Prometheus metrics of one server process (served on ``LAKEKEEPER__METRICS__PORT``)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "lakekeeper_http_requests_total",
            "HTTP requests by endpoint and status",
            ["method", "endpoint", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "lakekeeper_http_request_duration_seconds",
            "HTTP request latency by endpoint",
            ["method", "endpoint"],
            registry=self.registry,
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.cache = Counter(
            "lakekeeper_cache_requests_total", "Cache lookups", ["cache", "result"], registry=self.registry
        )
        self.event_failures = Counter(
            "lakekeeper_event_publish_failures_total",
            "Failed event deliveries by sink",
            ["sink"],
            registry=self.registry,
        )
        self.events_published = Counter(
            "lakekeeper_events_published_total", "Delivered events by sink", ["sink"], registry=self.registry
        )
        self.events_dropped = Counter(
            "lakekeeper_events_dropped_total",
            "Events dropped undelivered by sink (its queue was full)",
            ["sink"],
            registry=self.registry,
        )
        self.tasks = Counter(
            "lakekeeper_task_runs_total",
            "Task attempts by queue and outcome",
            ["queue", "outcome"],
            registry=self.registry,
        )

        # labelled children by label values: ``labels()`` validates and joins its arguments on every
        # call, several times per request (a loadTable counts three cache lookups); the set of label
        # values is small (routes x methods x statuses, caches x hit/miss)
        self._request_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self._cache_children: dict[tuple[str, str], Any] = {}

    def bind_store(self, store) -> None:
        """Report the store's pool sizes at scrape time and count its cache lookups."""
        self.registry.register(_PoolCollector(store))
        store.caches.observe(self.count_cache_lookup)

    def count_cache_lookup(self, cache: str, result: str) -> None:
        child = self._cache_children.get((cache, result))
        if child is None:
            child = self._cache_children[(cache, result)] = self.cache.labels(cache, result)
        child.inc()

    def observe_request(self, method: str, endpoint: str, status: int, seconds: float) -> None:
        children = self._request_children.get((method, endpoint, status))
        if children is None:
            children = self._request_children[(method, endpoint, status)] = (
                self.requests.labels(method, endpoint, str(status)), self.latency.labels(method, endpoint))
        children[0].inc()
        children[1].observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class _PoolCollector:
    def __init__(self, store):
        self.store = store

    def collect(self):
        family = GaugeMetricFamily(
            "lakekeeper_db_pool_connections", "Database pool connections", labels=["pool", "state"]
        )
        for pool, stats in self.store.pool_stats().items():
            family.add_metric([pool, "open"], stats["size"])
            family.add_metric([pool, "idle"], stats["idle"])
            family.add_metric([pool, "in_use"], stats["size"] - stats["idle"])
        yield family
        lookups = self.store.caches.lookups
        yield GaugeMetricFamily("lakekeeper_change_feed_listening",
                                "1 while the catalog change feed is listening (loads may be cached)",
                                value=1 if lookups.live else 0)
        size = GaugeMetricFamily("lakekeeper_cache_size", "Entries in a cache", labels=["cache"])
        size.add_metric(["tabular-lookup"], len(lookups))
        size.add_metric(["table-metadata"], len(self.store.caches.metadata))
        yield size
