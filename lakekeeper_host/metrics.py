"""Prometheus metrics of one server process (served on ``LAKEKEEPER__METRICS__PORT``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest


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
        self.db_pool = Gauge(
            "lakekeeper_db_pool_connections", "Database pool connections", ["pool", "state"], registry=self.registry
        )
        self.tasks = Counter(
            "lakekeeper_task_runs_total", "Task attempts by queue and outcome", ["queue", "outcome"], registry=self.registry
        )

    def observe_request(self, method: str, endpoint: str, status: int, seconds: float) -> None:
        self.requests.labels(method, endpoint, str(status)).inc()
        self.latency.labels(method, endpoint).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
