"""The load-driver process: ``python -m bench.driver`` reads one job as JSON on stdin, prints the result.

The orchestrator (``bench.run``) starts one driver process per workload, so the client side
never shares an interpreter (or a GIL) with a server under test. A job is
``{"workload": name, "args": {...}}`` naming a coroutine in ``bench.workloads``; the last line
of stdout is the JSON result.

Two load models:
- closed: a fixed number of workers, each sends its next request when the previous answered
  (throughput at fixed concurrency);
- open: requests arrive at a fixed mean rate (Poisson arrivals, seeded) whether or not earlier ones
  have answered; latency counts from the scheduled arrival, so a slow server cannot hide queueing
  ("coordinated omission").
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from typing import Any


async def closed_loop(concurrency: int, duration: float, step: Callable[[int, random.Random], Awaitable[Any]],
                      *, seed: int = 42, max_steps: int | None = None) -> dict[str, Any]:
    """Run ``step(worker, rng)`` back to back in ``concurrency`` workers until ``duration`` passed."""
    deadline = time.perf_counter() + duration
    steps = 0

    async def worker(index: int) -> None:
        nonlocal steps
        rng = random.Random(seed * 1000 + index)
        while time.perf_counter() < deadline and (max_steps is None or steps < max_steps):
            steps += 1
            await step(index, rng)

    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    return {"model": "closed", "concurrency": concurrency, "steps": steps}


async def open_loop(rate: float, duration: float, step: Callable[[random.Random, float], Awaitable[Any]],
                    *, seed: int = 42, max_in_flight: int = 256) -> dict[str, Any]:
    """Start ``step(rng, scheduled_at)`` at Poisson arrivals of mean ``rate``/s for ``duration`` seconds.

    Arrivals that find ``max_in_flight`` requests still open are dropped and counted: a server
    that falls that far behind has failed the rate.
    """
    rng = random.Random(seed)
    start = time.perf_counter()
    offset = 0.0
    scheduled = dropped = 0
    in_flight: set[asyncio.Task] = set()
    max_lag = 0.0
    while True:
        offset += rng.expovariate(rate)
        if offset >= duration:
            break
        at = start + offset
        delay = at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        else:
            max_lag = max(max_lag, -delay)
        scheduled += 1
        if len(in_flight) >= max_in_flight:
            dropped += 1
            continue
        task = asyncio.create_task(step(rng, at))
        in_flight.add(task)
        task.add_done_callback(in_flight.discard)
    if in_flight:
        await asyncio.gather(*in_flight)
    return {"model": "open", "target_rate": rate, "scheduled": scheduled, "dropped": dropped,
            "achieved_rate": round((scheduled - dropped) / duration, 2), "max_driver_lag_ms": round(max_lag * 1000, 2)}


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    from bench import workloads

    function = getattr(workloads, job["workload"])
    return asyncio.run(function(**job.get("args", {})))


def main() -> int:
    job = json.loads(sys.stdin.read())
    try:
        result = run_job(job)
    except Exception as exc:
        traceback.print_exc()
        result = {"failed": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write("\n" + json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
