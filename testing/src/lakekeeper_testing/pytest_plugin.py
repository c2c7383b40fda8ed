"""pytest plugin of ``lakekeeper-testing`` (entry point ``pytest11``, active wherever it is installed).

The service fixtures every test package shares, each once per test run (session scope): a test
isolates its state in the service (a fresh bucket prefix, topic, warehouse or database), never by
starting a server of its own. Each skips the tests that need it when its binary is not installed
(``service_or_skip``). A test package's own fixture of the same name overrides one of these.

- ``pg_url`` / ``pg_url_factory``: fresh PostgreSQL databases (``postgres_for_tests``).
- ``lakekeeper_server_factory``: started ``lakekeeper serve`` processes on SQLite or PostgreSQL;
  ``lakekeeper_server``: the shared one, once per backend.
- ``spark``: the run's one SparkSession.
- ``idp``: an OIDC issuer (audience ``lakekeeper``) whose tokens every server here can trust.
- ``seaweed_sts``: SeaweedFS with STS; the role ``vended`` may do anything in its buckets, so only
  a session policy narrows vended credentials. ``seaweed_two_users``: SeaweedFS with two identities.
- ``nats_server``, ``kafka_broker``, ``openbao``, ``azurite``.
- ``key_prefix``: a fresh folder name per test, so storage tests never see each other's objects.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator

import pytest

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.secrets_conformance import SeaweedTwoUsers
from lakekeeper_testing.server import CatalogServer, start_server
from lakekeeper_testing.services import (
    Azurite,
    KafkaBroker,
    ManagedService,
    NatsServer,
    OpenBaoServer,
    SeaweedS3,
    postgres_for_tests,
    seaweed_iam_config,
    serving,
    skip_if_postgres_is_off,
)

# the buckets of ``seaweed_sts``; the authz-openfga tests keep one of their own because the shared Spark
# session's Hadoop FileSystem cache is keyed by bucket
STS_BUCKETS = ("lakekeeper", "lakekeeper-fga")
STS_ROLE = "vended"
STS_ROLE_POLICY = {
    "Statement": [
        {
            "Effect": "Allow",
            "Action": ["s3:*"],
            "Resource": [
                arn for bucket in STS_BUCKETS for arn in (f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*")
            ],
        }
    ]
}
AUDIENCE = "lakekeeper"


_BYTECODE_PREFIX = "PYTHONPYCACHEPREFIX"
_bytecode_key = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """With ``PYTHONDONTWRITEBYTECODE`` set, every Python process the run starts (servers, CLI
    runs, maintenance jobs, benchmark drivers) compiles the project's sources anew, ~0.3 s of CPU per server
    start (measured). Child processes keep their bytecode in a cache of this run instead, outside the
    source tree; this process is left as it is."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get(_BYTECODE_PREFIX):
        return
    config.stash[_bytecode_key] = os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ[_BYTECODE_PREFIX] = tempfile.mkdtemp(prefix="lakekeeper-test-bytecode-")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _bytecode_key in config.stash:
        os.environ["PYTHONDONTWRITEBYTECODE"] = config.stash[_bytecode_key]
        shutil.rmtree(os.environ.pop(_BYTECODE_PREFIX), ignore_errors=True)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database: LAKEKEEPER_TEST_PG_URL's server, or a throwaway cluster."""
    with postgres_for_tests() as url:
        yield url


@pytest.fixture(scope="session")
def pg_url_factory() -> Iterator[Callable[[], str]]:
    """Make more fresh databases on the same PostgreSQL (each test that needs isolation)."""
    stack = []

    def make() -> str:
        skip_if_postgres_is_off()
        cm = postgres_for_tests()
        stack.append(cm)
        return cm.__enter__()

    yield make
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


@pytest.fixture(scope="session")
def lakekeeper_server_factory(pg_url_factory) -> Iterator[Callable[..., CatalogServer]]:
    """``start(env, backend="sqlite" | "postgres", **kwargs)``: a started (and, on PostgreSQL,
    bootstrapped) server with the ``LAKEKEEPER__*`` settings ``env``; ``server.backend`` says which.
    ``backend="postgres"`` makes a fresh database; ``pg_url=`` puts the server on a given one (servers
    sharing a database). Other ``kwargs`` go to ``start_server`` (``timeout``, ``bootstrap``,
    ``bootstrap_token``) and ``CatalogServer`` (``data_dir``, ``workers``).

    Every server the factory started is closed at the end of the run; a test or a fixture of a narrower
    scope closes its own when done, with ``with lakekeeper_server_factory(env) as server:`` or
    ``server.close()``. ``LAKEKEEPER_TEST_SKIP_POSTGRES=1`` skips the PostgreSQL variants.
    """
    servers: list[CatalogServer] = []

    def start(
        env: dict[str, str] | None = None, *, backend: str = "sqlite", pg_url: str | None = None, **kwargs
    ) -> CatalogServer:
        if backend == "postgres" and pg_url is None:
            pg_url = pg_url_factory()
        server = start_server(env, pg_url=pg_url, **kwargs)
        server.backend = "postgres" if pg_url else backend
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


@pytest.fixture(scope="session", params=["sqlite", "postgres"])
def lakekeeper_server(request, lakekeeper_server_factory) -> Iterator[CatalogServer]:
    """The run's shared catalog server, once per backend (every installed plugin loaded): tests isolate
    their state in a fresh warehouse."""
    server = lakekeeper_server_factory(backend=request.param)
    yield server
    server.close()


@pytest.fixture
def key_prefix() -> str:
    """A fresh folder in a shared bucket or filesystem per test, so tests never see each other's objects."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def idp() -> Iterator[OidcIssuer]:
    with OidcIssuer("lakekeeper-tests", audience=AUDIENCE) as issuer:
        yield issuer


@pytest.fixture(scope="session")
def spark():
    """THE SparkSession of the test run (one JVM, Iceberg + s3a jars); skipped without Java.

    Its queries are short and its tables small: the JVM compiles with C1 only (``C1_ONLY_CONF``)."""
    import shutil

    if shutil.which("java") is None:
        pytest.skip("java (17) is not installed: apt-get install openjdk-17-jre-headless")
    from lakekeeper_host.engines.spark import C1_ONLY_CONF, shared_session

    session = shared_session(extra_conf=C1_ONLY_CONF)
    yield session
    session.stop()


def _shared_service(make: Callable[[], ManagedService], doc: str):
    """A session fixture serving ``make()`` for the whole run."""

    @pytest.fixture(scope="session")
    def fixture():
        with serving(make()) as service:
            yield service

    fixture.__doc__ = doc
    return fixture


seaweed_sts = _shared_service(
    lambda: SeaweedS3(iam_config=seaweed_iam_config({STS_ROLE: STS_ROLE_POLICY}), buckets=STS_BUCKETS),
    "SeaweedFS with STS: the role ``vended`` may do anything in ``STS_BUCKETS``.",
)
seaweed_two_users = _shared_service(
    lambda: SeaweedTwoUsers(buckets=["lakekeeper"]), "SeaweedFS with two full-rights identities."
)
nats_server = _shared_service(NatsServer, "``nats-server`` with JetStream.")
kafka_broker = _shared_service(KafkaBroker, "Tansu, a Kafka-protocol broker keeping messages in memory.")
openbao = _shared_service(OpenBaoServer, "OpenBao (``bao server -dev``).")
azurite = _shared_service(
    lambda: Azurite(containers=["lakekeeper", "other-fs"]),
    "Azurite's Blob service over plain HTTP (account-key SAS), containers ``lakekeeper`` and ``other-fs``.",
)
