"""Table maintenance as a Spark job: Iceberg's Spark procedures, run through the REST catalog.

The job is an ordinary catalog client: a Spark driver whose default catalog is the REST catalog
(URI plus optional token or OAuth2 client credential), on ``local[*]`` or any master URL. It runs,
per table and in this order::

    rewrite_data_files -> rewrite_manifests -> expire_snapshots -> remove_orphan_files

Compaction comes first so that expiry can drop the files it replaced and leaves at most
``retain-last`` snapshots. Every procedure commits atomically through the catalog, so a job that
fails part-way leaves a valid table (the steps already committed stay committed).

Storage: ``file`` tables are read and written as they are. S3 tables (``s3://``, ``s3a://``,
``s3n://``) go through Hadoop's s3a with HadoopFileIO (Iceberg's S3FileIO needs the AWS SDK v2):
the job loads each with vended credentials and gives them to s3a for that table's bucket alone.
s3a cannot use remote signing, so a table the catalog vends no credentials for fails in one line.

Deletes: ``expire_snapshots`` deletes the files of the snapshots it expires wherever their manifests
say they are, and on ``file`` storage the job has the server's rights. So a table whose snapshots
reach any file outside its own location (an ``add_files`` of another path, a copied manifest) is
not maintained: :func:`files_outside` looks first. (``remove_orphan_files`` only lists the table
location; S3 tables are maintained with credentials vended for the table alone.) A commit that
lands between that look and the expiry is not seen by it: see docs/security.md.

The server's ``table_maintenance`` queue runs one ``python -m lakekeeper_host.engines.spark_maintenance``
process per task (the JVM never shares the server's process or event loop): the job arrives as
JSON on stdin, the results leave as one ``RESULT_MARKER`` line on stdout. ``lakekeeper maintain
--catalog-uri`` runs :func:`run_job` in its own process.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
from attrs import field, frozen
from cattrs.gen import make_dict_structure_fn, override

from lakekeeper_host.config.env import deep_merge
from lakekeeper_host.config.types import parse_duration
from lakekeeper_host.engines.spark import C1_ONLY_CONF, build_spark_session, s3a_conf
from lakekeeper_host.errors import bad_request
from lakekeeper_host.serde import WIRE, kebab, structure_body

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CATALOG_NAME = "lakekeeper"
RESULT_MARKER = "LAKEKEEPER-MAINTENANCE-RESULT "
MIN_INTERVAL = timedelta(minutes=1)
# Iceberg's remove_orphan_files procedure refuses younger files: they may belong to a commit in flight.
MIN_ORPHAN_AGE = timedelta(days=1)


# ---------------------------------------------------------------- the policy (kebab-case JSON)


@frozen
class RewriteDataFilesPolicy:
    enabled: bool = True
    # None: the table's own write.target-file-size-bytes (Iceberg's default 512 MiB)
    target_file_size_bytes: int | None = None
    min_input_files: int = 5


@frozen
class RewriteManifestsPolicy:
    enabled: bool = True


@frozen
class ExpireSnapshotsPolicy:
    enabled: bool = True
    older_than: str = "P5D"
    retain_last: int = 1


@frozen
class RemoveOrphanFilesPolicy:
    enabled: bool = True
    older_than: str = "P3D"


@frozen
class MaintenancePolicy:
    """What a maintenance run does, and whether (and how often) the queue schedules it.

    The warehouse policy is the ``table_maintenance`` queue config; a table's override is a
    partial policy merged over it. Durations are ISO-8601 (``P1D``, ``PT12H``).
    """

    enabled: bool = False
    interval: str = "P1D"
    rewrite_data_files: RewriteDataFilesPolicy = RewriteDataFilesPolicy()
    rewrite_manifests: RewriteManifestsPolicy = RewriteManifestsPolicy()
    expire_snapshots: ExpireSnapshotsPolicy = ExpireSnapshotsPolicy()
    remove_orphan_files: RemoveOrphanFilesPolicy = RemoveOrphanFilesPolicy()

    def check(self) -> None:
        """Semantic checks; a ``ValueError`` names the offending field (``... @ body.<path>``)."""
        _at_least(self.interval, MIN_INTERVAL, "interval")
        _at_least(self.expire_snapshots.older_than, timedelta(0), "expire-snapshots.older-than")
        _at_least(self.remove_orphan_files.older_than, MIN_ORPHAN_AGE, "remove-orphan-files.older-than")
        if self.expire_snapshots.retain_last < 1:
            raise ValueError("retain-last must be at least 1 @ body.expire-snapshots.retain-last")
        if self.rewrite_data_files.min_input_files < 1:
            raise ValueError("min-input-files must be at least 1 @ body.rewrite-data-files.min-input-files")
        size = self.rewrite_data_files.target_file_size_bytes
        if size is not None and size < 1:
            raise ValueError(
                "target-file-size-bytes must be positive @ body.rewrite-data-files.target-file-size-bytes"
            )

    @property
    def interval_delta(self) -> timedelta:
        return parse_duration(self.interval)


def _at_least(value: str, minimum: timedelta, path: str) -> None:
    try:
        duration = parse_duration(value)
    except ValueError as exc:
        raise ValueError(f"{exc} @ body.{path}") from None
    if duration < minimum:
        raise ValueError(f"{path.rsplit('.', 1)[-1]} must be at least {_iso(minimum)} @ body.{path}")


def _iso(delta: timedelta) -> str:
    if delta.days and not delta.seconds:
        return f"P{delta.days}D"
    return f"PT{int(delta.total_seconds())}S"


POLICY_CLASSES = (
    RewriteDataFilesPolicy, RewriteManifestsPolicy, ExpireSnapshotsPolicy, RemoveOrphanFilesPolicy, MaintenancePolicy
)
# A misspelt key would silently fall back to a default: reject it and name it.
for _cls in POLICY_CLASSES:
    _renames = {a.name: override(rename=kebab(a.name)) for a in attrs.fields(_cls)}
    WIRE.register_structure_hook(_cls, make_dict_structure_fn(_cls, WIRE, _cattrs_forbid_extra_keys=True, **_renames))


def parse_policy(*layers: dict[str, Any]) -> MaintenancePolicy:
    """The policy from partial JSON layers (later ones win, key by key); a bad one is a 400 naming the field."""
    merged: dict[str, Any] = {}
    for layer in layers:
        if not isinstance(layer, dict):
            raise bad_request("Request body must be a JSON object")
        merged = deep_merge(merged, layer)
    policy = structure_body(merged, MaintenancePolicy)
    try:
        policy.check()
    except ValueError as exc:
        raise bad_request(f"Invalid request body: {exc}") from None
    return policy


def policy_json(policy: MaintenancePolicy) -> dict[str, Any]:
    return WIRE.unstructure(policy)


# ---------------------------------------------------------------- the job


@frozen
class CatalogAccess:
    """How the job reaches the catalog: like any Iceberg REST client."""

    uri: str
    warehouse: str
    token: str | None = field(default=None, repr=False)
    # OAuth2 client credential "client_id:client_secret" (with oauth2-server-uri and scope)
    credential: str | None = field(default=None, repr=False)
    oauth2_server_uri: str | None = None
    scope: str | None = None

    def properties(self) -> dict[str, str]:
        """Catalog properties beyond uri/warehouse, as both Spark and PyIceberg name them."""
        props = {"token": self.token, "credential": self.credential,
                 "oauth2-server-uri": self.oauth2_server_uri, "scope": self.scope}  # fmt: skip
        return {key: value for key, value in props.items() if value}


@frozen
class SparkJobSettings:
    master: str = "local[*]"
    jars_mode: str = "auto"
    conf: dict[str, str] = field(factory=dict)


@frozen
class MaintenanceJob:
    catalog: CatalogAccess
    policy: MaintenancePolicy = MaintenancePolicy()
    spark: SparkJobSettings = SparkJobSettings()
    # each a namespace path plus the table name; empty: every table of the warehouse
    tables: tuple[tuple[str, ...], ...] = ()


@frozen
class TableResult:
    table: tuple[str, ...]
    figures: dict[str, Any] | None = None
    error: str | None = None


class MaintenanceError(Exception):
    """The job could not run (catalog unreachable, Spark not startable) or a step failed."""


# ---------------------------------------------------------------- running it


def check_catalog(catalog: CatalogAccess, timeout: float = 10.0) -> None:
    """Fail in a second, not after a JVM start, when the catalog cannot be reached or rejects our token."""
    url = catalog.uri.rstrip("/") + "/v1/config?" + urllib.parse.urlencode({"warehouse": catalog.warehouse})
    headers = {"Authorization": f"Bearer {catalog.token}"} if catalog.token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout):
            return
    except urllib.error.HTTPError as exc:
        # without a token the OAuth2 exchange happens inside the client: only a server error is conclusive
        if exc.code >= 500 or (catalog.token and exc.code in (401, 403)):
            raise MaintenanceError(f"catalog at {catalog.uri} answered {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise MaintenanceError(f"catalog unreachable at {catalog.uri}: {reason}") from None


def _rest_client(catalog: CatalogAccess, **properties: str) -> Any:
    from pyiceberg.catalog.rest import RestCatalog

    return RestCatalog("maintenance", uri=catalog.uri, warehouse=catalog.warehouse, **catalog.properties(),
                       **properties)  # fmt: skip


def list_tables(catalog: CatalogAccess) -> list[tuple[str, ...]]:
    """Every table of the warehouse, nested namespaces included (listed with PyIceberg)."""
    client = _rest_client(catalog)
    tables: list[tuple[str, ...]] = []
    pending: list[tuple[str, ...]] = [()]
    while pending:
        parent = pending.pop()
        children = client.list_namespaces(parent)
        pending.extend(tuple(child) for child in children)
        if parent:
            tables.extend(tuple(identifier) for identifier in client.list_tables(parent))
    return sorted(tables)


S3_SCHEMES = ("s3", "s3a", "s3n")


@frozen
class TableStorage:
    """What the job learns from loading a table: the Spark settings its storage needs (empty for
    ``file``) and the bytes of its current snapshot (``total-files-size``; None when not recorded)."""

    conf: dict[str, str] = field(factory=dict)
    size_bytes: int | None = None


def table_storage(catalog: CatalogAccess, tables: list[tuple[str, ...]]) -> dict[tuple[str, ...], TableStorage | str]:
    """Per table: its :class:`TableStorage`, or why it cannot be reached.

    An S3 table is loaded with ``X-Iceberg-Access-Delegation: vended-credentials``; the credentials
    the catalog vends are scoped to that table, so they become s3a's per-bucket settings of a Spark
    session that maintains this table alone (see :func:`s3a_table_conf`).
    """
    client = None
    storage: dict[tuple[str, ...], TableStorage | str] = {}
    for table in tables:
        name = ".".join(table)
        try:
            client = client or _rest_client(catalog, **{"header.X-Iceberg-Access-Delegation": "vended-credentials"})
            loaded = client.load_table(table)
        except Exception as exc:  # not found, forbidden, catalog errors: one line for this table
            storage[table] = f"cannot load {name} from the catalog: {type(exc).__name__}: {describe_error(exc)}"
            continue
        snapshot = loaded.current_snapshot()
        size = snapshot.summary.get("total-files-size") if snapshot and snapshot.summary else "0"
        size_bytes = int(size) if size is not None and size.isdigit() else None
        location = loaded.location()
        if location.partition("://")[0] not in S3_SCHEMES:
            storage[table] = TableStorage({}, size_bytes)
            continue
        try:
            storage[table] = TableStorage(s3a_table_conf(location, loaded.io.properties), size_bytes)
        except MaintenanceError as exc:
            storage[table] = f"cannot maintain {name}: {exc}"
    return storage


def s3a_table_conf(location: str, io: dict[str, str]) -> dict[str, str]:
    """s3a settings for the bucket of an S3 table from its load-table config (PyIceberg merges the
    longest-prefix ``storage-credentials`` entry over ``config``).

    s3a signs its own requests: a table the catalog offers remote signing for, but no credentials,
    cannot be reached, and the error says so in one line.
    """

    if not io.get("s3.access-key-id") or not io.get("s3.secret-access-key"):
        offered = io.get("s3.remote-signing-enabled") == "true"
        signing = " (it offers remote signing, which s3a cannot use)" if offered else ""
        raise MaintenanceError(
            f"the catalog vended no S3 credentials for {location}{signing}; Spark reaches S3 through s3a, "
            "which needs vended credentials: enable STS on the warehouse's storage profile"
        )
    bucket = location.partition("://")[2].split("/", 1)[0]
    s3 = {
        "bucket": bucket,
        "access_key": io["s3.access-key-id"],
        "secret_key": io["s3.secret-access-key"],
        "session_token": io.get("s3.session-token"),
        "endpoint": io.get("s3.endpoint"),
        "region": io.get("s3.region") or io.get("client.region"),
        "path_style": io.get("s3.path-style-access", "false").lower() == "true",
    }
    # The credentials cover the table's prefix alone: keep s3a from deleting the parent folders'
    # directory markers after each write (keys outside that prefix; Hadoop 3.4 keeps them anyway).
    marker = {f"spark.hadoop.fs.s3a.bucket.{bucket}.directory.marker.retention": "keep"}
    return {**s3a_conf(s3, CATALOG_NAME), **marker}


# A job over this little data (every table of the job together) is over in seconds, before the JIT's
# optimizing compiler (C2) pays for the CPU it spends: such jobs compile with C1 alone, on the driver and
# on the executors (measured on 2 cores: a 50-file, 30-snapshot table's run takes 24 instead of 38 s of
# driver CPU), and shuffle into 2 partitions. Larger jobs keep the full JIT and Spark's 200 shuffle
# partitions (adaptive execution merges the small ones). An operator's SPARK_CONF wins over both, and
# spark.{driver,executor}.extraJavaOptions come after these defaults on the java command line.
SMALL_JOB_BYTES = 256 * 1024**2
SMALL_JOB_CONF = {**C1_ONLY_CONF, "spark.sql.shuffle.partitions": "2"}
LARGE_JOB_CONF = {"spark.sql.shuffle.partitions": "200"}


def is_small_job(sizes: list[int | None]) -> bool:
    """True when every table's size is known and together they stay under :data:`SMALL_JOB_BYTES`."""
    return all(size is not None for size in sizes) and sum(size or 0 for size in sizes) <= SMALL_JOB_BYTES


def spark_session(
    job: MaintenanceJob, storage: dict[str, str] | None = None, *, s3_jars: bool = False, small: bool = False
) -> SparkSession:

    props = job.catalog.properties()
    extra = {f"spark.sql.catalog.{CATALOG_NAME}.{key}": value for key, value in props.items()
             if key not in ("token", "credential")}  # fmt: skip
    return build_spark_session(
        job.catalog.uri,
        job.catalog.warehouse,
        catalog_name=CATALOG_NAME,
        master=job.spark.master,
        token=job.catalog.token,
        credential=job.catalog.credential,
        # procedure timestamps below are UTC literals; the operator's settings come last
        extra_conf={
            **extra,
            "spark.sql.session.timeZone": "UTC",
            **(SMALL_JOB_CONF if small else LARGE_JOB_CONF),
            **(storage or {}),
            **job.spark.conf,
        },
        s3_jars=s3_jars,
        jars_mode=job.spark.jars_mode,  # type: ignore[arg-type]
        app_name="lakekeeper-table-maintenance",
    )


def run_job(job: MaintenanceJob) -> list[TableResult]:
    """Maintain the job's tables (all of the warehouse when none are named), one result per table.

    Tables on ``file`` storage share one Spark session. An S3 table's vended credentials are good
    for that table alone, and Hadoop keeps one s3a client per bucket for the life of a JVM, so each
    S3 table gets a session of its own (on a cluster: an application with its own executors).
    """
    check_catalog(job.catalog)
    tables = list(dict.fromkeys(job.tables)) or list_tables(job.catalog)
    if not tables:
        return []
    storage = table_storage(job.catalog, tables)
    results = {table: TableResult(table, error=why) for table, why in storage.items() if isinstance(why, str)}
    reachable = {table: found for table, found in storage.items() if isinstance(found, TableStorage)}
    shared = [table for table, found in reachable.items() if not found.conf]
    sessions = [({}, shared)] if shared else []
    sessions += [(found.conf, [table]) for table, found in reachable.items() if found.conf]
    # the first session's JVM serves them all: it must hold the s3a classes, and its JIT is set once
    s3_jars = any(conf for conf, _ in sessions)
    small = is_small_job([found.size_bytes for found in reachable.values()])
    for conf, group in sessions:
        try:
            session = spark_session(job, conf, s3_jars=s3_jars, small=small)
        except Exception as exc:  # JVM, jars or master problems: one line for the operator
            raise MaintenanceError(f"cannot start Spark on {job.spark.master}: {describe_error(exc)}") from None
        try:
            for table in group:
                try:
                    results[table] = TableResult(table, figures=maintain_table(session, table, job.policy))
                except MaintenanceError as exc:
                    results[table] = TableResult(table, error=str(exc))
        finally:
            _stop_session(session, forget_s3_clients=bool(conf))
    return [results[table] for table in tables]


def _stop_session(session: SparkSession, *, forget_s3_clients: bool) -> None:
    jvm = session.sparkContext._jvm
    session.stop()
    if forget_s3_clients:  # the JVM outlives the session: its cached s3a clients hold this table's credentials
        try:
            jvm.org.apache.hadoop.fs.FileSystem.closeAll()
        except Exception:  # the JVM is gone: nothing is cached
            pass


def maintain_table(
    session: SparkSession, table: tuple[str, ...], policy: MaintenancePolicy, *, catalog_name: str = CATALOG_NAME
) -> dict[str, Any]:
    """Run the enabled procedures on one table; returns the figures (kebab-case keys)."""
    ident = ".".join(_quote(part) for part in (catalog_name, *table))
    procedure_table = _sql_string(".".join(_quote(part) for part in table))

    def call(step: str, sql: str) -> list[Any]:
        try:
            return session.sql(sql).collect()
        except Exception as exc:  # Spark's exceptions carry the JVM's message; keep its first line
            raise MaintenanceError(f"{step} failed on {'.'.join(table)}: {describe_error(exc)}") from None

    def count(metadata_table: str) -> int:
        return int(call("inspecting the table", f"SELECT count(*) FROM {ident}.{metadata_table}")[0][0])

    location = next(
        (row.data_type for row in call("inspecting the table", f"DESCRIBE TABLE EXTENDED {ident}")
         if row.col_name == "Location"), None,
    )  # fmt: skip
    if policy.expire_snapshots.enabled:
        if not location:
            raise MaintenanceError(f"not maintained: {'.'.join(table)} has no location")
        outside = files_outside(lambda sql: call("checking the table's files", sql), ident, location)
        if outside:
            raise MaintenanceError(
                f"not maintained: {'.'.join(table)} references files outside the table location {location} "
                f"(e.g. {', '.join(outside)}); expiring its snapshots would delete them"
            )
    figures: dict[str, Any] = {
        "snapshots-before": count("snapshots"),
        "data-files-before": count("data_files"),
        "bytes-before": _stored_bytes(session, location),
    }
    steps = []
    rewrite = policy.rewrite_data_files
    if rewrite.enabled:
        options = {"min-input-files": str(rewrite.min_input_files)}
        if rewrite.target_file_size_bytes is not None:
            options["target-file-size-bytes"] = str(rewrite.target_file_size_bytes)
        option_map = ", ".join(f"{_sql_string(k)}, {_sql_string(v)}" for k, v in options.items())
        row = call("rewrite_data_files", f"CALL {_quote(catalog_name)}.system.rewrite_data_files("
                   f"table => {procedure_table}, options => map({option_map}))")[0]  # fmt: skip
        figures |= {
            "data-files-rewritten": row.rewritten_data_files_count,
            "data-files-added": row.added_data_files_count,
            "bytes-rewritten": row.rewritten_bytes_count,
        }
        steps.append("rewrite-data-files")
    if policy.rewrite_manifests.enabled:
        row = call("rewrite_manifests",
                   f"CALL {_quote(catalog_name)}.system.rewrite_manifests(table => {procedure_table})")[0]  # fmt: skip
        figures |= {"manifests-rewritten": row.rewritten_manifests_count, "manifests-added": row.added_manifests_count}
        steps.append("rewrite-manifests")
    expire = policy.expire_snapshots
    if expire.enabled:
        before = count("snapshots")
        # relative to now, not to the start: the snapshots compaction just wrote count as well
        cutoff = _timestamp(datetime.now(UTC) - parse_duration(expire.older_than))
        arguments = f"table => {procedure_table}, older_than => {cutoff}, retain_last => {expire.retain_last}"
        row = call("expire_snapshots", f"CALL {_quote(catalog_name)}.system.expire_snapshots({arguments})")[0]
        figures |= {
            "snapshots-expired": before - count("snapshots"),
            "data-files-deleted": row.deleted_data_files_count,
            "delete-files-deleted": row.deleted_position_delete_files_count + row.deleted_equality_delete_files_count,
            "manifests-deleted": row.deleted_manifest_files_count,
            "manifest-lists-deleted": row.deleted_manifest_lists_count,
        }
        steps.append("expire-snapshots")
    orphans = policy.remove_orphan_files
    if orphans.enabled:
        cutoff = _timestamp(datetime.now(UTC) - parse_duration(orphans.older_than))
        rows = call("remove_orphan_files", f"CALL {_quote(catalog_name)}.system.remove_orphan_files("
                    f"table => {procedure_table}, older_than => {cutoff})")  # fmt: skip
        figures["orphan-files-removed"] = len(rows)
        steps.append("remove-orphan-files")
    figures |= {
        "snapshots-after": count("snapshots"),
        "data-files-after": count("data_files"),
        "bytes-after": _stored_bytes(session, location),
        "steps": steps,
    }
    if figures["bytes-before"] is not None and figures["bytes-after"] is not None:
        figures["bytes-reclaimed"] = figures["bytes-before"] - figures["bytes-after"]
    return figures


def canonical_location(location: str) -> str:
    """``file:/x`` and ``file:///x`` as ``file:///x``, ``s3a``/``s3n`` as ``s3``, no trailing slash."""
    scheme, sep, rest = location.partition(":")
    if not sep:
        return location.rstrip("/")
    if scheme.lower() == "file":
        return "file:///" + rest.lstrip("/").rstrip("/")
    if scheme.lower() in S3_SCHEMES:
        return "s3:" + rest.rstrip("/")
    return location.rstrip("/")


# the same canonical form in Spark SQL, and a '.'/'..' segment (%2e spelled too) anywhere in a path
_CANONICAL_SQL = "regexp_replace(regexp_replace({col}, '^(?i)file:/+', 'file:///'), '^(?i)s3[an]?://', 's3://')"
_DOT_SEGMENT_SQL = "lower({col}) RLIKE '(^|/)(\\\\.|%2e){{1,2}}(/|$)'"


def files_outside(query: Callable[[str], list[Any]], ident: str, location: str, limit: int = 3) -> list[str]:
    """Up to ``limit`` files the table's snapshots reach -- manifest lists, manifests, data and delete
    files -- that lie outside ``location`` (path segments compared, scheme spellings normalised)."""
    inside = canonical_location(location) + "/"
    sources = (("manifest_list", "snapshots"), ("path", "all_manifests"), ("file_path", "all_files"))
    found: list[str] = []
    for column, metadata_table in sources:
        canonical = _CANONICAL_SQL.format(col=column)
        sql = (f"SELECT {column} FROM {ident}.{metadata_table} WHERE "
               f"substring({canonical}, 1, {len(inside)}) <> {_sql_string(inside)} "
               f"OR {_DOT_SEGMENT_SQL.format(col=column)} LIMIT {limit}")  # fmt: skip
        found += [str(row[0]) for row in query(sql)]
        if len(found) >= limit:
            break
    return found[:limit]


def _stored_bytes(session: SparkSession, location: str | None) -> int | None:
    """Bytes under the table location, through Spark's Hadoop file system (None when it cannot list)."""
    if not location:
        return None
    try:
        jvm = session.sparkContext._jvm
        path = jvm.org.apache.hadoop.fs.Path(location)
        file_system = path.getFileSystem(session.sparkContext._jsc.hadoopConfiguration())
        # summed over the children: table-scoped S3 credentials cover what lies below the location,
        # not the location's own key, which a summary of the location itself would look up first
        return sum(int(file_system.getContentSummary(child.getPath()).getLength()) if child.isDirectory()
                   else int(child.getLen()) for child in file_system.listStatus(path))  # fmt: skip
    except Exception:  # e.g. no Hadoop file system for the scheme: the figure is just unknown
        return None


def _quote(part: str) -> str:
    return "`" + part.replace("`", "``") + "`"


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _timestamp(moment: datetime) -> str:
    return f"TIMESTAMP '{moment.astimezone(UTC):%Y-%m-%d %H:%M:%S.%f}'"


def describe_error(exc: BaseException) -> str:
    """The first meaningful line of a (possibly Java) exception."""
    java = getattr(exc, "java_exception", None)
    text = str(java.getMessage()) if java is not None else str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else type(exc).__name__)[:500]


def summarize(figures: dict[str, Any]) -> str:
    """One line for the task log: what the run did."""
    parts = []
    if "data-files-rewritten" in figures:
        parts.append(f"rewrote {figures['data-files-rewritten']} data files into {figures['data-files-added']}")
    if "manifests-rewritten" in figures:
        parts.append(f"rewrote {figures['manifests-rewritten']} manifests into {figures['manifests-added']}")
    if "snapshots-expired" in figures:
        parts.append(f"expired {figures['snapshots-expired']} snapshots")
    if "orphan-files-removed" in figures:
        parts.append(f"removed {figures['orphan-files-removed']} orphan files")
    if figures.get("bytes-reclaimed") is not None:
        parts.append(f"reclaimed {figures['bytes-reclaimed']} bytes")
    line = "; ".join(parts) or "no maintenance step enabled"
    return line[0].upper() + line[1:]


# ---------------------------------------------------------------- subprocess entry point


def main() -> int:
    """``python -m lakekeeper_host.engines.spark_maintenance``: job JSON on stdin, one result line on stdout."""
    try:
        job = WIRE.structure(json.load(sys.stdin), MaintenanceJob)
        outcome: dict[str, Any] = {"results": [WIRE.unstructure(r) for r in run_job(job)]}
    except MaintenanceError as exc:
        outcome = {"error": str(exc)}
    except Exception as exc:  # a broken job spec or an unexpected failure: reported, not a traceback
        outcome = {"error": f"{type(exc).__name__}: {describe_error(exc)}"}
    print(RESULT_MARKER + json.dumps(outcome), flush=True)
    return 1 if "error" in outcome or any(r["error"] for r in outcome["results"]) else 0


if __name__ == "__main__":
    sys.exit(main())
