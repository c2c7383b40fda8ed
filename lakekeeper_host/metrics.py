"""Prometheus metrics of one server process (served on ``LAKEKEEPER__METRICS__PORT``).

Besides this server's own names (``lakekeeper_http_requests_total``, ``lakekeeper_cache_requests_total``
...), the names Lakekeeper's dashboards and alerts query are served too: ``axum_http_requests_total``,
``axum_http_requests_duration_seconds``, ``lakekeeper_cache_hits_total`` / ``lakekeeper_cache_misses_total``
(label ``cache_type``). They are derived from the same counters when /metrics is scraped
(:class:`LakekeeperNames`), so a request costs nothing more.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric


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
        self.registry.register(LakekeeperNames(
            lambda: [*self.requests.collect(), *self.latency.collect(), *self.cache.collect()]
        ))

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
        # `cache_type` is Lakekeeper's label for the same gauge (its dashboards group by it)
        size = GaugeMetricFamily("lakekeeper_cache_size", "Entries in a cache", labels=["cache", "cache_type"])
        for name, entries in (("tabular-lookup", len(lookups)), ("table-metadata", len(self.store.caches.metadata))):
            size.add_metric([name, cache_type(name)], entries)
        yield size


def cache_type(cache: str) -> str:
    """Lakekeeper's ``cache_type`` value for one of our cache names (``table-metadata`` -> ``table_metadata``)."""
    return cache.replace("-", "_")


_RULE_PARAMETER = re.compile(r"<(?:[a-z]+:)?(\w+)>")


class LakekeeperNames:
    """The samples of our request and cache counters again, under Lakekeeper's metric names.

    ``source`` yields the metric families to translate: this process's counters, or (several
    workers) what ``prometheus_client``'s multiprocess collector aggregated. Endpoints are written
    as Lakekeeper's router writes them (``/catalog/v1/{prefix}/namespaces``). Lakekeeper's
    ``axum_http_requests_pending`` (requests in flight) is not provided: it would cost every request.
    """

    def __init__(self, source: Callable[[], Iterable[Metric]]):
        self.source = source

    def collect(self) -> Iterable[Metric]:
        requests = Metric("axum_http_requests", "HTTP requests by method, endpoint and status", "counter")
        latency = Metric("axum_http_requests_duration_seconds", "HTTP request latency", "histogram")
        hits = Metric("lakekeeper_cache_hits", "Cache hits by cache type", "counter")
        misses = Metric("lakekeeper_cache_misses", "Cache misses by cache type", "counter")
        for family in self.source():
            for sample in family.samples:
                if sample.name.endswith("_created"):
                    continue
                labels = dict(sample.labels)
                if "endpoint" in labels:
                    labels["endpoint"] = _RULE_PARAMETER.sub(r"{\1}", labels["endpoint"])
                if family.name == "lakekeeper_http_requests":
                    requests.add_sample("axum_http_requests_total", labels, sample.value)
                elif family.name == "lakekeeper_http_request_duration_seconds":
                    suffix = sample.name.removeprefix("lakekeeper_http_request_duration_seconds")
                    latency.add_sample("axum_http_requests_duration_seconds" + suffix, labels, sample.value)
                elif family.name == "lakekeeper_cache_requests":
                    target = hits if labels.get("result") == "hit" else misses
                    target.add_sample(f"{target.name}_total", {"cache_type": cache_type(labels["cache"])},
                                      sample.value)
        yield from (requests, latency, hits, misses)
