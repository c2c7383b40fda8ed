"""Suite-wide test selection: what the fast inner loop (``pytest -m "not slow"``) leaves out.

A test is ``slow`` when it needs a JVM, a browser, a second database backend or an external
service binary, or is marked so itself: Spark, table maintenance, the console's browser tests, the
benchmark and example runs, the infrastructure starters, the event brokers, the cloud-storage
emulators, and every ``[postgres]`` variant of a test that also runs on the embedded SQLite.
The whole suite (``scripts/test.sh``) runs everything but the long forms of the drills
(``drill_full``: the three-kill crash drill, the full fuzzing drill), which run with
``LAKEKEEPER_DRILLS=full`` (docs/drills.md). A drill's quick subset (``drill_subset``) stays in
the fast loop although ``tests/drills`` is slow.

What keeps the fast loop fast without leaving a domain out: a server process start costs seconds, so
tests share one server per backend (``tests/conftest.py``, module-scoped ones for test-only plugins
or settings) and isolate their state in a fresh warehouse; waits poll a condition instead of
sleeping; long-lived servers whose tests wait for no task poll their queues rarely
(``IDLE_POLLING``); httpx's default TLS context is built once (below).
"""

from __future__ import annotations

import functools
import os
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
FULL_DRILLS = os.environ.get("LAKEKEEPER_DRILLS", "").lower() == "full"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("drill_full") and not FULL_DRILLS:
            item.add_marker(pytest.mark.skip(reason="a long drill: run it with LAKEKEEPER_DRILLS=full"))
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


def pytest_configure(config: pytest.Config) -> None:
    share_httpx_default_tls_context()


def share_httpx_default_tls_context() -> None:
    """Build httpx's default TLS context (certifi's CA bundle) once per test process, not per client.

    Every ``httpx.Client()`` and every ``httpx.get/post(...)`` loads the CA bundle again: 20-30 ms
    each, about 25 s of a fast-loop run that creates 800 clients for plain-HTTP loopback servers.
    An ``ssl.SSLContext`` is meant to be shared (httpx's own advice is ``verify=<one context>``);
    anything but the default (``verify=False``, a context or a CA file of its own, client
    certificates) still goes through httpx unchanged, and so does every server process.
    """
    try:
        from httpx._transports import default as transports
    except ImportError:  # another httpx layout: keep its behaviour, only slower
        return
    create = getattr(transports, "create_ssl_context", None)
    if create is None or getattr(create, "shared_default", False):
        return

    @functools.lru_cache(maxsize=8)
    def default_context(trust_env: bool, cert_file: str | None, cert_dir: str | None):
        return create(verify=True, cert=None, trust_env=trust_env)

    def create_ssl_context(verify=True, cert=None, trust_env=True):
        if verify is True and cert is None:
            return default_context(trust_env, os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
        return create(verify=verify, cert=cert, trust_env=trust_env)

    create_ssl_context.shared_default = True
    transports.create_ssl_context = create_ssl_context
