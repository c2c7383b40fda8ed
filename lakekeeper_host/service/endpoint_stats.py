"""The in-process buffer of endpoint call counts; the server layer flushes it to the store hourly-bucketed."""

from __future__ import annotations

from collections import Counter

from lakekeeper_host.ids import now_ms

HOUR_MS = 3600 * 1000


# Key: (project id or None, warehouse id or None, "METHOD /route", status)
Key = tuple[str | None, str | None, str, int]


def bucket_of(ms: int) -> int:
    return ms - ms % HOUR_MS


class EndpointStatsBuffer:
    """In-memory counts, swapped out atomically on flush (no locks on the request path)."""

    def __init__(self) -> None:
        self.counts: Counter[tuple[Key, int]] = Counter()
        self.first_seen: dict[tuple[Key, int], int] = {}

    def record(self, project_id: str | None, warehouse_id: str | None, route: str, status: int) -> None:
        t = now_ms()
        key = ((project_id, warehouse_id, route, status), bucket_of(t))
        self.counts[key] += 1
        self.first_seen.setdefault(key, t)

    def take(self) -> tuple[Counter[tuple[Key, int]], dict[tuple[Key, int], int]]:
        counts, first = self.counts, self.first_seen
        self.counts, self.first_seen = Counter(), {}
        return counts, first
