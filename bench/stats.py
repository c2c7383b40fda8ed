"""Latency and error bookkeeping for the load driver: per-operation samples, percentiles, status counts."""

from __future__ import annotations

import math
import time
from collections import Counter, defaultdict
from typing import Any


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list (q in 0..100)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize_latencies(latencies: list[float]) -> dict[str, float | None]:
    """p50/p95/p99/mean/max in milliseconds; ``None`` where there is no sample."""
    if not latencies:
        return {"p50_ms": None, "p95_ms": None, "p99_ms": None, "mean_ms": None, "max_ms": None}
    ordered = sorted(latencies)
    return {
        "p50_ms": round(percentile(ordered, 50) * 1000, 3),
        "p95_ms": round(percentile(ordered, 95) * 1000, 3),
        "p99_ms": round(percentile(ordered, 99) * 1000, 3),
        "mean_ms": round(sum(ordered) / len(ordered) * 1000, 3),
        "max_ms": round(ordered[-1] * 1000, 3),
    }


class Recorder:
    """Collects one latency sample and one status per request, grouped by operation name.

    ``ok`` statuses are those the operation expects (2xx, plus 404 where the workload asks for a
    miss); everything else counts as an error under its status (``"exception:<Type>"`` when no
    response arrived at all).
    """

    def __init__(self) -> None:
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.ok: Counter[str] = Counter()
        self.errors: dict[str, Counter[str]] = defaultdict(Counter)
        self.error_samples: dict[str, str] = {}
        self.started = time.perf_counter()
        self.stopped: float | None = None

    def record(self, op: str, seconds: float, status: int | str, ok: bool, detail: str = "") -> None:
        self.latencies[op].append(seconds)
        if ok:
            self.ok[op] += 1
        else:
            self.errors[op][str(status)] += 1
            self.error_samples.setdefault(f"{op} {status}", detail[:300])

    def reset(self) -> None:
        """Forget every sample (after a warm-up) and restart the clock."""
        self.__init__()

    def start(self) -> None:
        self.started = time.perf_counter()
        self.stopped = None

    def stop(self) -> None:
        self.stopped = time.perf_counter()

    @property
    def elapsed(self) -> float:
        return (self.stopped or time.perf_counter()) - self.started

    def summary(self) -> dict[str, Any]:
        """Throughput (successful requests per second of wall time) and latency per operation, and in total."""
        elapsed = max(self.elapsed, 1e-9)
        ops: dict[str, Any] = {}
        for op in sorted(self.latencies):
            errors = dict(self.errors.get(op, {}))
            ops[op] = {
                "requests": len(self.latencies[op]),
                "ok": self.ok[op],
                "errors": errors,
                "throughput_rps": round(self.ok[op] / elapsed, 2),
                **summarize_latencies(self.latencies[op]),
            }
        all_latencies = [value for values in self.latencies.values() for value in values]
        errors_by_status: Counter[str] = Counter()
        for counter in self.errors.values():
            errors_by_status.update(counter)
        total_ok = sum(self.ok.values())
        return {
            "duration_s": round(elapsed, 3),
            "requests": len(all_latencies),
            "ok": total_ok,
            "throughput_rps": round(total_ok / elapsed, 2),
            "errors_by_status": dict(errors_by_status),
            "error_samples": dict(list(self.error_samples.items())[:20]),
            **summarize_latencies(all_latencies),
            "operations": ops,
        }
