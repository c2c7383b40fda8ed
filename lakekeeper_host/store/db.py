"""Database access for both backends, each its own executor: :class:`PostgresStore` (separate
read/write pools, statements on asyncpg) and :class:`SqliteStore`; ``Store(url)`` picks one.

Nothing outside ``store/`` writes SQL. Queries use ``:name`` parameters and portable SQL
(``ON CONFLICT``, ``RETURNING`` and partial indexes exist in both engines). A store function that
writes a catalog row says so (``Executor.wrote_catalog``): the lookup cache never guesses from SQL text.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import json
import logging
import re
import ssl
import time
import weakref
from collections.abc import AsyncIterator, Callable, Collection, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit, urlunsplit

import asyncpg
import attrs
import databases

from lakekeeper_host.config import ConfigError, Settings
from lakekeeper_host.errors import CatalogError
from lakekeeper_host.ids import new_id, now_ms  # noqa: F401 - re-exported for the store's callers
from lakekeeper_host.store.cache import StoreCaches

log = logging.getLogger(__name__)




def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def loads(value: str | None) -> Any:
    return None if value is None else json.loads(value)


Row = Mapping[str, Any]


class Executor:
    """The query interface shared by ``Store`` and an open ``Transaction``."""

    dialect: str
    caches: StoreCaches

    def after_transaction(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` now and, inside a transaction, once more when it ends: cache entries
        a write makes stale are forgotten, and not re-learnt from a read before its commit."""
        callback()

    def wrote_catalog(self) -> None:
        """Declared by every store function that writes a project, warehouse, namespace or tabular
        row (or deletes one whose children go with it): the lookups this process cached are
        forgotten -- inside a transaction when it ends -- so its next read sees the write at once
        (other processes learn of it from the change feed)."""
        self.caches.lookups.changed_everything()

    async def fetch_one(self, sql: str, values: Mapping[str, Any] | None = None) -> Row | None:
        raise NotImplementedError

    async def fetch_all(self, sql: str, values: Mapping[str, Any] | None = None) -> list[Row]:
        raise NotImplementedError

    async def execute(self, sql: str, values: Mapping[str, Any] | None = None) -> None:
        raise NotImplementedError

    async def ping(self) -> bool:
        """Whether the database answers a trivial query."""
        return await self.fetch_val("SELECT 1") == 1

    async def fetch_val(self, sql: str, values: Mapping[str, Any] | None = None) -> Any:
        row = await self.fetch_one(sql, values)
        return None if row is None else next(iter(row.values()))

    @property
    def is_postgres(self) -> bool:
        return self.dialect == "postgresql"


def rows_with_ids(db: Executor, table: str, ids: Collection[str], values: dict[str, Any], name: str = "ids") -> str:
    """``table``, only its rows whose ``id`` is one of ``ids``: a FROM source named ``table``, the ids
    ONE parameter (an array on PostgreSQL, a JSON array on SQLite), so the statement's text does not
    change with their count and no parameter limit applies.

    PostgreSQL looks the rows up by primary key first (``OFFSET 0`` keeps the subquery whole), so a
    page costs what the ids cost, however many rows the rest of the query would scan: as a plain
    filter, ``id = ANY($1)`` is compared element by element on every row, and with statistics older
    than a burst of creates PostgreSQL scanned a whole namespace so (100 ids of 1,000 tables: 2.4 ms
    vs 0.5 ms)."""
    if db.is_postgres:
        values[name] = list(ids)
        return f"(SELECT * FROM {table} WHERE id = ANY(:{name}) OFFSET 0) AS {table}"
    values[name] = dumps(list(ids))
    return f"(SELECT * FROM {table} WHERE id IN (SELECT value FROM json_each(:{name}))) AS {table}"


def is_one_of(db: Executor, column: str, items: Collection[str], values: dict[str, Any], name: str) -> str:
    """A condition: ``column`` equals one of ``items``, the items ONE parameter (as in
    :func:`rows_with_ids`), so the statement's text does not change with their count."""
    if db.is_postgres:
        values[name] = list(items)
        return f"{column} = ANY(:{name})"
    values[name] = dumps(list(items))
    return f"{column} IN (SELECT value FROM json_each(:{name}))"


def _row(record: Any) -> Row | None:
    return None if record is None else dict(record._mapping)


# the innermost open transaction of the running task (a nested one is a savepoint of it)
_open_transaction: contextvars.ContextVar[_TransactionCallbacks | None] = contextvars.ContextVar(
    "lakekeeper_open_transaction", default=None
)


class _TransactionCallbacks(Executor):
    """``after_transaction`` callbacks collected while a transaction is open, and whether a write
    in it declared catalog rows touched (``wrote_catalog``): then the lookups are forgotten when it ends."""

    def __init__(self, caches: StoreCaches):
        self.caches = caches
        self.pending_callbacks: list[Callable[[], None]] = []
        self.catalog_written = False
        self.parent = _open_transaction.get()

    def after_transaction(self, callback: Callable[[], None]) -> None:
        callback()
        self.pending_callbacks.append(callback)

    def wrote_catalog(self) -> None:
        tx: _TransactionCallbacks | None = self
        while tx is not None:  # a savepoint's writes are its outer transaction's too
            tx.catalog_written = True
            tx = tx.parent

    def run_callbacks(self) -> None:
        for callback in self.pending_callbacks:
            callback()
        self.pending_callbacks.clear()
        if self.catalog_written:
            self.caches.lookups.changed_everything()


# ---------------------------------------------------------------- SQLite: databases' aiosqlite connection


class SqliteTransaction(_TransactionCallbacks):
    """Queries on the one write connection (inside ``SqliteStore.transaction()``)."""

    dialect = "sqlite"

    def __init__(self, connection: databases.core.Connection, caches: StoreCaches):
        super().__init__(caches)
        self._connection = connection

    async def fetch_one(self, sql, values=None):
        return _row(await self._connection.fetch_one(sql, values))

    async def fetch_all(self, sql, values=None):
        return [dict(r._mapping) for r in await self._connection.fetch_all(sql, values)]

    async def execute(self, sql, values=None):
        await self._connection.execute(sql, values)


# ---------------------------------------------------------------- PostgreSQL: databases' pool, asyncpg queries
#
# ``databases`` owns the pool, the per-task connection and the (nested) transactions; the
# statements themselves run on its raw asyncpg connection. The same ``:name`` SQL is rewritten
# once per statement to asyncpg's ``$n``: compiling it through SQLAlchemy's ``text()`` on every
# call cost ~0.2 ms of CPU per query, more than asyncpg's whole round trip. Parameters are found
# as ``text()`` finds them.

_BIND_PARAMETER = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")


@functools.lru_cache(maxsize=2048)
def positional_sql(sql: str) -> tuple[str, tuple[str, ...]]:
    """``:name`` parameters -> ``$1, $2 ...`` (a name used twice keeps its number); ``\\:`` is a colon."""
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    return _BIND_PARAMETER.sub(number, sql).replace("\\:", ":"), tuple(names)


def _arguments(names: tuple[str, ...], values: Mapping[str, Any] | None) -> list[Any]:
    if not names:
        return []
    if values is None:
        raise KeyError(f"missing values for SQL parameters {', '.join(names)}")
    return [values[name] for name in names]


class PostgresTransaction(_TransactionCallbacks):
    """Queries on one asyncpg connection (inside ``Store.transaction()``)."""

    dialect = "postgresql"

    def __init__(self, connection: asyncpg.Connection, caches: StoreCaches):
        super().__init__(caches)
        self._connection = connection

    async def fetch_one(self, sql, values=None):
        text, names = positional_sql(sql)
        record = await self._connection.fetchrow(text, *_arguments(names, values))
        return None if record is None else dict(record)

    async def fetch_all(self, sql, values=None):
        text, names = positional_sql(sql)
        return [dict(r) for r in await self._connection.fetch(text, *_arguments(names, values))]

    async def execute(self, sql, values=None):
        text, names = positional_sql(sql)
        await self._connection.execute(text, *_arguments(names, values))


async def _keep_session(connection: asyncpg.Connection) -> None:
    """A released connection is not reset with ``RESET ALL``, ``UNLISTEN *`` ... (a round trip
    per release): no statement here leaves session state behind (advisory locks are
    transaction-scoped; no SET, LISTEN or open cursors). An open transaction is still rolled
    back by the pool before this runs."""


# PostgreSQL's text and jsonb cannot hold U+0000 (SQLite's can): a name, property or query value
# carrying one is the request's fault, a 400 (found by the fuzzing drill, tests/drills)
_UNSTORABLE_TEXT = (asyncpg.exceptions.CharacterNotInRepertoireError, asyncpg.exceptions.UntranslatableCharacterError)


class PoolTimeout(CatalogError):
    """No pooled connection became free within ``LAKEKEEPER__PG_ACQUIRE_TIMEOUT``: 503, retry later."""

    def __init__(self, seconds: float):
        super().__init__(
            503, "DatabaseConnectionTimeout",
            f"No database connection became free within {seconds:g} s (LAKEKEEPER__PG_ACQUIRE_TIMEOUT); "
            "the server is overloaded, retry later",
            headers={"Retry-After": "1"},
        )


class DatabaseUnavailable(CatalogError):
    """PostgreSQL cannot be reached or dropped the connection (restart, failover, network): 503, retry
    later. The pool reconnects on its own once the database is back; nothing needs a restart."""

    def __init__(self, cause: BaseException):
        super().__init__(
            503, "DatabaseUnavailable",
            f"The catalog database is unavailable ({type(cause).__name__}); retry later",
            headers={"Retry-After": "1"},
        )


# errors of a query that mean "the database went away", not "the statement was wrong"
_CONNECTION_LOST = (
    asyncpg.PostgresConnectionError,  # SQLSTATE class 08, and a connection closed mid-operation
    asyncpg.exceptions.CannotConnectNowError,  # starting up / shutting down
    asyncpg.exceptions.AdminShutdownError,  # "terminating connection due to administrator command"
    asyncpg.exceptions.CrashShutdownError,
)


def _is_closed(connection: databases.core.Connection) -> bool:
    try:
        return connection.raw_connection.is_closed()
    except (AssertionError, asyncpg.InterfaceError):  # not acquired, or already released
        return True


SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
_SCHEMA_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]{0,62}$")


def postgres_connect_options(ssl_mode: str | None, schema: str | None, root_cert: str | None = None) -> dict[str, Any]:
    """asyncpg connection options for ``PG_SSL_MODE`` (libpq's sslmode names), ``PG_SSL_ROOT_CERT``
    and ``PG_SCHEMA`` (the ``search_path`` of every connection; the migrations create the schema)."""
    options: dict[str, Any] = {}
    if ssl_mode:
        if ssl_mode not in SSL_MODES:
            raise ConfigError(f"LAKEKEEPER__PG_SSL_MODE: {ssl_mode!r} is not one of {', '.join(SSL_MODES)}")
        options["ssl"] = ssl_mode
    if root_cert:
        options["ssl"] = _verifying_context(ssl_mode, root_cert)
    if schema:
        if not _SCHEMA_NAME.match(schema):
            raise ConfigError(f"LAKEKEEPER__PG_SCHEMA: {schema!r} is not a plain identifier (letters, digits, _)")
        options["server_settings"] = {"search_path": schema}
    return options


def _verifying_context(ssl_mode: str | None, root_cert: str) -> ssl.SSLContext:
    """TLS that trusts ``root_cert``: the server's certificate must chain to it (``require`` too,
    as libpq does when a root certificate is given); ``verify-full`` also checks the host name."""
    if ssl_mode not in ("require", "verify-ca", "verify-full"):
        raise ConfigError(
            "LAKEKEEPER__PG_SSL_ROOT_CERT: needs LAKEKEEPER__PG_SSL_MODE require, verify-ca or verify-full"
        )
    try:
        context = ssl.create_default_context(cafile=root_cert)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"LAKEKEEPER__PG_SSL_ROOT_CERT: cannot read {root_cert}: {exc}") from None
    context.check_hostname = ssl_mode == "verify-full"
    return context


@attrs.frozen
class PoolOptions:
    """Lakekeeper's pool settings: ``PG_ENABLE_STATEMENT_LOGGING``, ``PG_TEST_BEFORE_ACQUIRE``,
    ``PG_CONNECTION_MAX_LIFETIME`` (seconds). The defaults add nothing to a query or an acquire."""

    log_statements: bool = False
    test_before_acquire: bool = False
    max_lifetime: float | None = None


statement_log = logging.getLogger("lakekeeper_host.store.statements")


def _log_statement(record: Any) -> None:
    """asyncpg's query logger: the statement and its duration, never its values (they may be secrets)."""
    elapsed = f"{record.elapsed * 1000:.1f} ms" if record.elapsed is not None else "-"
    statement_log.info("%s %s%s", elapsed, " ".join(record.query.split()),
                       f" failed: {type(record.exception).__name__}" if record.exception else "")


class _Recycled(Exception):
    """A pooled connection was too old, or failed its test: closed by the pool, take another."""


class _ConnectionGuard:
    """asyncpg pool callbacks for :class:`PoolOptions`: ``init`` when a connection is opened,
    ``setup`` when one is handed out (a failing ``setup`` makes asyncpg close that connection)."""

    def __init__(self, options: PoolOptions):
        self.options = options
        self._born: weakref.WeakKeyDictionary[Any, float] = weakref.WeakKeyDictionary()

    async def init(self, connection: asyncpg.Connection) -> None:
        self._born[connection] = time.monotonic()
        if self.options.log_statements:
            connection.add_query_logger(_log_statement)

    async def setup(self, proxy: Any) -> None:
        connection = getattr(proxy, "_con", proxy)
        lifetime = self.options.max_lifetime
        if lifetime is not None and time.monotonic() - self._born.get(connection, time.monotonic()) > lifetime:
            raise _Recycled("connection older than LAKEKEEPER__PG_CONNECTION_MAX_LIFETIME")
        if self.options.test_before_acquire:
            try:
                await self.probe(proxy)
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                raise _Recycled(f"connection failed its test: {type(exc).__name__}") from exc

    async def probe(self, connection: Any) -> None:
        await connection.execute("SELECT 1")

    def pool_arguments(self) -> dict[str, Any]:
        arguments: dict[str, Any] = {"init": self.init}
        if self.options.test_before_acquire or self.options.max_lifetime is not None:
            arguments["setup"] = self.setup
        return arguments


# a recycled connection is replaced by a new one; this many in a row mean the database is the problem
_RECYCLE_ATTEMPTS = 3


class _PostgresPool:
    """A ``databases`` pool whose connections run the rewritten statements on asyncpg. Like
    ``databases`` itself, a task inside ``Store.transaction()`` keeps its connection for every
    query it makes on this pool, so its reads see its own writes."""

    def __init__(self, url: str, max_size: int, caches: StoreCaches, *, acquire_timeout: float | None = None,
                 connect_options: Mapping[str, Any] | None = None, options: PoolOptions | None = None):
        self.caches = caches
        self.acquire_timeout = acquire_timeout
        self.guard = guard = _ConnectionGuard(options or PoolOptions())
        self.database = databases.Database(
            url, min_size=1, max_size=max_size, reset=_keep_session, **guard.pool_arguments(),
            **(connect_options or {})
        )

    @contextlib.asynccontextmanager
    async def _acquired(self) -> AsyncIterator[Any]:
        """``databases``' per-task connection, waiting at most ``acquire_timeout`` for the pool
        (its enter undoes itself when cancelled, so the timeout leaves the pool consistent).

        A database that cannot be reached, or drops the connection during the request, is a 503
        ``DatabaseUnavailable`` (never a 500): the request may be retried once it is back.
        """
        connection = self.database.connection()
        try:
            async with asyncio.timeout(self.acquire_timeout):
                for attempt in range(_RECYCLE_ATTEMPTS):
                    try:
                        await connection.__aenter__()
                        break
                    except _Recycled as exc:  # closed by the pool; the next acquire opens a new one
                        if attempt + 1 == _RECYCLE_ATTEMPTS:
                            raise DatabaseUnavailable(exc.__cause__ or exc) from exc
        except TimeoutError:
            raise PoolTimeout(self.acquire_timeout) from None
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:  # connecting failed
            raise DatabaseUnavailable(exc) from exc
        try:
            yield connection
        except _CONNECTION_LOST as exc:
            raise DatabaseUnavailable(exc) from exc
        except (asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError) as exc:
            if _is_closed(connection):  # "connection is closed", a protocol in disarray: the server went away
                raise DatabaseUnavailable(exc) from exc
            raise
        except _UNSTORABLE_TEXT as exc:
            raise CatalogError(
                400, "BadRequestException", f"The request contains text PostgreSQL cannot store: {exc}"
            ) from None
        finally:
            await connection.__aexit__(None, None, None)

    async def connect(self) -> None:
        await self.database.connect()

    async def disconnect(self, timeout: float = 5.0) -> None:
        """Close the pool; connections a cancelled task never gave back would make asyncpg wait
        for ever, so after ``timeout`` they are terminated (shutdown must not hang)."""
        pool = getattr(self.database._backend, "_pool", None)
        try:
            await asyncio.wait_for(self.database.disconnect(), timeout)
        except TimeoutError:
            in_use = pool.get_size() - pool.get_idle_size() if pool is not None else "?"
            log.warning("database pool not closed after %ss (%s connection(s) still in use): terminating it",
                        timeout, in_use)
            if pool is not None:
                pool.terminate()

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[asyncpg.Connection]:
        async with self._acquired() as connection:
            yield connection.raw_connection

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresTransaction]:
        """A transaction; nested in the same task it is a savepoint on the same connection."""
        async with self._acquired() as connection:
            raw = connection.raw_connection
            tx = PostgresTransaction(raw, self.caches)
            opened = _open_transaction.set(tx)
            try:
                # asyncpg's own transaction block (nested: a savepoint), not ``databases``': that one
                # keeps its reference to the task's connection when BEGIN or COMMIT fails, so after a
                # database restart a long-lived task (a task-queue poller) held a dead connection for ever
                async with raw.transaction():
                    yield tx
            finally:
                _open_transaction.reset(opened)
                tx.run_callbacks()

    def stats(self) -> dict[str, int] | None:
        pool = getattr(self.database._backend, "_pool", None)
        if pool is None:
            return None
        return {"size": pool.get_size(), "idle": pool.get_idle_size()}


class Store(Executor):
    """Connection pools plus the transaction discipline of each engine.

    ``Store(url)`` is the store of the URL's engine, each with its own executor:
    :class:`SqliteStore` (``sqlite...``) or :class:`PostgresStore`.
    """

    def __new__(cls, write_url: str, *args: Any, **kwargs: Any) -> Store:
        if cls is Store:
            cls = SqliteStore if write_url.startswith("sqlite") else PostgresStore
        return super().__new__(cls)

    def __init__(self, write_url: str, read_url: str | None = None, *, pool: tuple[int, int] = (10, 5),
                 caches: StoreCaches | None = None, acquire_timeout: float | None = None,
                 ssl_mode: str | None = None, schema: str | None = None, ssl_root_cert: str | None = None,
                 pool_options: PoolOptions | None = None):
        self.write_url = write_url
        self.caches = caches or StoreCaches()
        self.schema: str | None = None
        self.connect_options: dict[str, Any] = {}
        self.connected = False

    @classmethod
    def from_settings(cls, settings: Settings) -> Store:
        warehouse, tabular, role = settings.host.cache.warehouse, settings.host.cache.tabular, settings.host.cache.role
        caches = StoreCaches(warehouse_ttl=warehouse.time_to_live_secs, warehouse_capacity=warehouse.capacity,
                             warehouse_enabled=warehouse.enabled, lookup_capacity=tabular.capacity,
                             lookup_enabled=tabular.enabled, role_ttl=role.time_to_live_secs,
                             role_capacity=role.capacity, role_enabled=role.enabled)
        pg = settings.pg
        return cls(*database_urls(settings), pool=(pg.pg_read_pool_connections, pg.pg_write_pool_connections),
                   caches=caches, acquire_timeout=pg.pg_acquire_timeout, ssl_mode=pg.pg_ssl_mode,
                   schema=pg.pg_schema, ssl_root_cert=pg.pg_ssl_root_cert,
                   pool_options=PoolOptions(log_statements=pg.pg_enable_statement_logging,
                                            test_before_acquire=pg.pg_test_before_acquire,
                                            max_lifetime=pg.pg_connection_max_lifetime))

    async def connect(self) -> None:
        raise NotImplementedError

    async def disconnect(self) -> None:
        raise NotImplementedError

    # reads (``fetch_one``/``fetch_all``) go to the read pool; use ``transaction()`` for anything that must be fresh
    async def execute(self, sql, values=None):
        async with self.transaction() as tx:
            await tx.execute(sql, values)

    def transaction(self) -> contextlib.AbstractAsyncContextManager[Executor]:
        """A write transaction; commits on success, rolls back on any exception."""
        raise NotImplementedError

    @property
    def change_feed_dsn(self) -> str | None:
        """Where ``store/changes.py`` listens: the PostgreSQL database both pools use; None on
        SQLite and when reads go to a replica (see that module)."""
        return None

    def pool_stats(self) -> dict[str, dict[str, int]]:
        """Connections per pool: {"write": {"size": n, "idle": m}, "read": {...}} (PostgreSQL only)."""
        return {}

    async def ping(self) -> bool:
        try:
            await self.fetch_val("SELECT 1")
            return True
        except Exception:  # health reporting must never raise
            log.exception("database health check failed")
            return False


class SqliteStore(Store):
    """SQLite allows one writer: write transactions are serialised in-process by a lock and across
    processes by ``BEGIN IMMEDIATE`` with a busy timeout; WAL lets readers proceed meanwhile."""

    dialect = "sqlite"

    def __init__(self, write_url: str, read_url: str | None = None, **options: Any):
        super().__init__(write_url, read_url, **options)
        self._database = databases.Database(write_url)
        self._write_lock = asyncio.Lock()

    async def connect(self) -> None:
        path = self.write_url.split(":///", 1)[1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        await self._database.connect()
        # WAL lets readers proceed while one writer commits; the busy timeout covers
        # other processes holding the write lock.
        async with self._database.connection() as conn:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA busy_timeout=30000")
            await conn.execute("PRAGMA foreign_keys=ON")
        self.connected = True

    async def disconnect(self) -> None:
        await self._database.disconnect()
        self.connected = False

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[databases.core.Connection]:
        async with self._database.connection() as conn:
            if not getattr(conn, "_lk_pragmas", False):
                await conn.execute("PRAGMA busy_timeout=30000")
                await conn.execute("PRAGMA foreign_keys=ON")
                conn._lk_pragmas = True
            yield conn

    async def fetch_one(self, sql, values=None):
        async with self._connection() as conn:
            return _row(await conn.fetch_one(sql, values))

    async def fetch_all(self, sql, values=None):
        async with self._connection() as conn:
            return [dict(r._mapping) for r in await conn.fetch_all(sql, values)]

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Executor]:
        async with self._write_lock:
            async with self._database.connection() as conn:
                await conn.execute("PRAGMA busy_timeout=30000")
                await conn.execute("PRAGMA foreign_keys=ON")
                raw = conn.raw_connection
                await raw.execute("BEGIN IMMEDIATE")
                tx = SqliteTransaction(conn, self.caches)
                opened = _open_transaction.set(tx)
                try:
                    yield tx
                except BaseException:
                    await raw.rollback()
                    raise
                else:
                    await raw.commit()
                finally:
                    _open_transaction.reset(opened)
                    tx.run_callbacks()


class PostgresStore(Store):
    """A write pool and a read pool; optimistic compare-and-swap keeps commits safe across replicas."""

    dialect = "postgresql"

    def __init__(self, write_url: str, read_url: str | None = None, *, pool: tuple[int, int] = (10, 5),
                 caches: StoreCaches | None = None, acquire_timeout: float | None = None,
                 ssl_mode: str | None = None, schema: str | None = None, ssl_root_cert: str | None = None,
                 pool_options: PoolOptions | None = None):
        super().__init__(write_url, read_url, caches=caches)
        self.schema = schema
        # an sslmode in the URL counts as PG_SSL_MODE (databases itself ignores it)
        ssl_mode = ssl_mode or parse_qs(urlsplit(write_url).query).get("sslmode", [None])[0]
        self.connect_options = postgres_connect_options(ssl_mode, schema, ssl_root_cert)
        read_pool, write_pool = pool
        options: dict[str, Any] = {"acquire_timeout": acquire_timeout, "connect_options": self.connect_options,
                                   "options": pool_options}
        self._write = _PostgresPool(write_url, write_pool, self.caches, **options)
        self._read = (
            _PostgresPool(read_url, read_pool, self.caches, **options)
            if read_url and read_url != write_url
            else self._write
        )

    async def connect(self) -> None:
        await self._write.connect()
        if self._read is not self._write:
            await self._read.connect()
        self.connected = True

    async def disconnect(self) -> None:
        if self._read is not self._write:
            await self._read.disconnect()
        await self._write.disconnect()
        self.connected = False

    async def fetch_one(self, sql, values=None):
        text, names = positional_sql(sql)
        async with self._read.connection() as connection:
            record = await connection.fetchrow(text, *_arguments(names, values))
        return None if record is None else dict(record)

    async def fetch_all(self, sql, values=None):
        text, names = positional_sql(sql)
        async with self._read.connection() as connection:
            records = await connection.fetch(text, *_arguments(names, values))
        return [dict(r) for r in records]

    def transaction(self) -> contextlib.AbstractAsyncContextManager[Executor]:
        return self._write.transaction()

    @property
    def change_feed_dsn(self) -> str | None:
        if self._read is not self._write:
            return None
        return self.write_url.replace("postgresql+asyncpg://", "postgresql://", 1)

    def pool_stats(self) -> dict[str, dict[str, int]]:
        stats: dict[str, dict[str, int]] = {}
        for name, pool in (("write", self._write), ("read", self._read)):
            current = pool.stats()
            if current is not None:
                stats[name] = current
        return stats


def database_urls(settings: Settings) -> tuple[str, str | None]:
    """(write, read) URLs from ``PG_DATABASE_URL_*``, the ``PG_*`` pieces, or embedded SQLite."""
    pg = settings.pg
    if pg.pg_database_url_write or pg.pg_database_url_read:
        write = (pg.pg_database_url_write or pg.pg_database_url_read).get()
        read = (pg.pg_database_url_read or pg.pg_database_url_write).get()
        return asyncpg_url(write, "LAKEKEEPER__PG_DATABASE_URL_WRITE"), asyncpg_url(
            read, "LAKEKEEPER__PG_DATABASE_URL_READ"
        )
    if pg.pg_host_w:
        if not pg.pg_database:
            raise ConfigError("LAKEKEEPER__PG_DATABASE: required when LAKEKEEPER__PG_HOST_W is set")
        auth = quote(pg.pg_user or "postgres")
        if pg.pg_password:
            auth += ":" + quote(pg.pg_password.get(), safe="")
        write = f"postgresql://{auth}@{pg.pg_host_w}:{pg.pg_port}/{pg.pg_database}"
        read = f"postgresql://{auth}@{pg.pg_host_r or pg.pg_host_w}:{pg.pg_port}/{pg.pg_database}"
        return asyncpg_url(write, "LAKEKEEPER__PG_HOST_W"), asyncpg_url(read, "LAKEKEEPER__PG_HOST_R")
    return f"sqlite+aiosqlite:///{settings.embedded_database_file}", None


def asyncpg_url(url: str, variable: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql", "postgresql+asyncpg") or not parts.hostname:
        raise ConfigError(
            f"{variable}: not a PostgreSQL URL (expected postgresql://user:pass@host:port/db)"
        )
    try:
        parts.port  # noqa: B018 - validates the port
    except ValueError:
        raise ConfigError(f"{variable}: the port is not a number") from None
    return urlunsplit(("postgresql+asyncpg", *parts[1:]))


def redact_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(":" + parts.password + "@", ":**********@")
        return urlunsplit((parts.scheme, netloc, *parts[2:]))
    return url
