"""Suite-wide test selection: what the fast inner loop (``pytest -m "not slow"``) leaves out.

A test is ``slow`` when it needs a JVM, a browser, a second database backend or an external
service binary, or is marked so itself: Spark, table maintenance, the console's browser tests, the
benchmark and example runs, the infrastructure starters, the event brokers, the cloud-storage
emulators, and every ``[postgres]`` variant of a test that also runs on the embedded SQLite.
The whole suite (``scripts/test.sh``) runs everything. A drill's quick subset (``drill_subset``)
stays in the fast loop although ``tests/drills`` is slow.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
SLOW_PATHS = (
    "tests/spark",
    "tests/maintenance",
    "tests/ui",
    "tests/bench",
    "tests/examples",
    "tests/infra",
    "tests/events",
    "tests/drills",
    "plugins/events-kafka",
    "plugins/events-nats",
    "plugins/storage-adls",
    "plugins/storage-gcs",
    "plugins/secrets-vault",
    "plugins/authz-openfga",
)
SLOW_MARKERS = ("spark", "s3", "duckdb", "postgres")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        try:
            relative = item.path.resolve().relative_to(ROOT).as_posix()
        except ValueError:
            continue
        if item.get_closest_marker("drill_subset"):
            continue
        if (
            relative.startswith(SLOW_PATHS)
            or "postgres" in item.nodeid.split("::")[-1]
            or any(item.get_closest_marker(name) for name in SLOW_MARKERS)
        ):
            item.add_marker(pytest.mark.slow)
