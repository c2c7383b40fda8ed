"""PySpark sessions wired to an Iceberg REST catalog, with or without Maven access.

Spark is the reference Iceberg client, so interop tests and users' quick starts both need a session
that talks to our catalog. With Maven access Spark fetches the Iceberg runtime itself
(``spark.jars.packages``). Without it (CI and the build machines reach only PyPI, npm and apt) the
runtime comes from the PyPI wheel ``snowpark-connect-deps-iceberg`` plus the two relocated
dependency jars in ``shared/spark-jars`` that this runtime lacks (see its README), and s3a support
from the jars inside the ``sagemaker-pyspark`` sdist.

Choose with ``jars_mode`` or ``$LAKEKEEPER_SPARK_JARS_MODE``: ``offline``, ``online`` or ``auto``
(the default: local jars when they are all present, else Maven when it answers).

The driver binds to loopback only, runs on Java 17 (``$JAVA_HOME`` wins; otherwise an installed
Java 17 is preferred when ``java`` on the PATH is another version) and uses the master given, else
``$LAKEKEEPER_SPARK_MASTER``, else ``local[*]``; any Spark master URL works (``spark://host:7077``).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

JarsMode = Literal["auto", "offline", "online"]

ICEBERG_VERSION = "1.10.2"
ICEBERG_RUNTIME_PACKAGE = f"org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:{ICEBERG_VERSION}"
# pyspark 3.5 ships the Hadoop 3.3.4 client; hadoop-aws must match it and pulls in the AWS SDK v1 bundle.
HADOOP_AWS_PACKAGE = "org.apache.hadoop:hadoop-aws:3.3.4"
ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"

SHADED_DEPENDENCY_JARS = ("iceberg-shaded-jackson.jar", "iceberg-shaded-httpclient5.jar")
HADOOP_AWS_JARS = ("hadoop-aws-3.3.1.jar", "aws-java-sdk-bundle-1.11.901.jar")
SAGEMAKER_PYSPARK_SDIST = "sagemaker-pyspark==1.4.5"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"

JARS_MODE_ENV = "LAKEKEEPER_SPARK_JARS_MODE"
JARS_DIR_ENV = "LAKEKEEPER_SPARK_JARS_DIR"
MASTER_ENV = "LAKEKEEPER_SPARK_MASTER"
DEFAULT_MASTER = "local[*]"
JAVA_VERSION = 17  # Spark 3.5 supports 8 to 17 fully; Iceberg 1.10 needs 11 or newer
# where distributions and installers put JDKs (Debian/Ubuntu, RHEL, macOS, SDKMAN, Temurin tarballs)
JAVA_HOME_PATTERNS = ("/usr/lib/jvm/*", "/Library/Java/JavaVirtualMachines/*/Contents/Home",
                      str(Path.home() / ".sdkman" / "candidates" / "java" / "*"), "/opt/java/*")  # fmt: skip
DEFAULT_JARS_CACHE = Path.home() / ".cache" / "lakekeeper" / "jars"


class SparkJarsError(RuntimeError):
    """The Iceberg jars are neither available locally nor downloadable."""


class JavaNotFound(RuntimeError):
    """No Java runtime to start Spark's JVM with."""


@attrs.frozen
class SparkJars:
    """Where Spark gets its extra classes: local jar files or Maven coordinates."""

    jars: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()

    def conf(self) -> dict[str, str]:
        conf = {}
        if self.jars:
            conf["spark.jars"] = ",".join(self.jars)
        if self.packages:
            conf["spark.jars.packages"] = ",".join(self.packages)
        return conf


# ---------------------------------------------------------------------------------------------
# jar resolution


def iceberg_runtime_jar() -> Path | None:
    """The Scala 2.12 Iceberg runtime from ``snowpark-connect-deps-iceberg``, if installed."""
    spec = importlib.util.find_spec("snowpark_connect_deps_iceberg")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        jars = sorted((Path(location) / "jars").glob("iceberg-spark-runtime-3.5_2.12-*.jar"))
        if jars:
            return jars[-1]
    return None


def shaded_dependency_dir() -> Path | None:
    """The folder holding the relocated Jackson and httpclient5 jars the runtime above lacks.

    ``$LAKEKEEPER_SPARK_JARS_DIR`` wins; otherwise the first ``shared/spark-jars`` found walking up
    from this package and from the working directory.
    """
    for candidate in shaded_dependency_candidates():
        if all((candidate / jar).is_file() for jar in SHADED_DEPENDENCY_JARS):
            return candidate
    return None


def shaded_dependency_candidates() -> list[Path]:
    """Where :func:`shaded_dependency_dir` looks, in order: ``$LAKEKEEPER_SPARK_JARS_DIR`` alone when set;
    else ``shared/spark-jars`` in any folder above this package or the working directory (a checkout's
    ``../shared/spark-jars``), then the per-user cache ``~/.cache/lakekeeper/jars/spark-jars``."""
    if configured := os.environ.get(JARS_DIR_ENV):
        return [Path(configured)]
    starts = (Path(__file__).resolve().parent, Path.cwd().resolve())
    candidates = [folder / "shared" / "spark-jars" for start in starts for folder in (start, *start.parents)]
    return [*dict.fromkeys(candidates), DEFAULT_JARS_CACHE / "spark-jars"]


def ensure_hadoop_aws_jars(cache_dir: Path | str | None = None) -> tuple[Path, ...]:
    """hadoop-aws 3.3.1 and the AWS SDK v1 bundle for s3a, extracted once into ``cache_dir``.

    PyPI's only copy is inside the ``sagemaker-pyspark`` sdist (about 180 MB), so the first call
    downloads it with pip and keeps just the two jars; later calls return at once.
    """
    cache = Path(cache_dir) if cache_dir else DEFAULT_JARS_CACHE
    targets = tuple(cache / name for name in HADOOP_AWS_JARS)
    if all(target.is_file() for target in targets):
        return targets
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lk-sagemaker-", dir=cache) as download:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             SAGEMAKER_PYSPARK_SDIST, "--dest", download],
            check=True,
        )  # fmt: skip
        sdist = next(Path(download).glob("sagemaker_pyspark-*.tar.gz"))
        with tarfile.open(sdist) as archive:
            for member in archive.getmembers():
                name = Path(member.name).name
                if name in HADOOP_AWS_JARS and member.isfile():
                    source = archive.extractfile(member)
                    assert source is not None
                    partial = cache / f"{name}.part"
                    partial.write_bytes(source.read())
                    partial.replace(cache / name)  # atomic: a half-written jar is never picked up
    missing = [target.name for target in targets if not target.is_file()]
    if missing:
        raise SparkJarsError(f"{SAGEMAKER_PYSPARK_SDIST} sdist did not contain {missing}")
    return targets


def maven_reachable(timeout: float = 3.0) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(MAVEN_CENTRAL, method="HEAD"), timeout=timeout):
            return True
    except OSError:
        return False


def resolve_spark_jars(mode: JarsMode | None = None, *, s3: bool = False) -> SparkJars:
    """Pick local jars or Maven packages for the Iceberg runtime (and s3a when ``s3``)."""
    mode = mode or os.environ.get(JARS_MODE_ENV, "auto")  # type: ignore[assignment]
    if mode not in ("auto", "offline", "online"):
        raise ValueError(f"jars mode must be auto, offline or online, not {mode!r}")
    runtime, shaded = iceberg_runtime_jar(), shaded_dependency_dir()
    local_complete = runtime is not None and shaded is not None
    if mode == "online" or (mode == "auto" and not local_complete and maven_reachable()):
        return SparkJars(packages=(ICEBERG_RUNTIME_PACKAGE, *([HADOOP_AWS_PACKAGE] if s3 else [])))
    if not local_complete:
        raise SparkJarsError(
            "Iceberg jars for Spark not found offline: "
            + ("" if runtime else "pip install -e '.[spark]' (the runtime jar, PyPI snowpark-connect-deps-iceberg); ")
            + ("" if shaded else (
                f"{' and '.join(SHADED_DEPENDENCY_JARS)} are in none of "
                + ", ".join(str(c) for c in shaded_dependency_candidates())
                + f": copy them into one (or point ${JARS_DIR_ENV} at their folder; "
                "scripts/build-spark-jars.sh builds them into the per-user cache); "))
            + "or use jars_mode='online' where Maven Central is reachable"
        )
    assert runtime is not None and shaded is not None
    jars = [runtime, *(shaded / jar for jar in SHADED_DEPENDENCY_JARS)]
    if s3:
        jars += ensure_hadoop_aws_jars()
    return SparkJars(jars=tuple(str(jar) for jar in jars))


# ---------------------------------------------------------------------------------------------
# configuration


def catalog_conf(
    catalog_uri: str | None,
    warehouse: str,
    *,
    catalog_name: str = "lakekeeper",
    catalog_type: str = "rest",
    token: str | None = None,
    credential: str | None = None,
) -> dict[str, str]:
    """The Spark settings that define one Iceberg catalog and make it the default."""
    prefix = f"spark.sql.catalog.{catalog_name}"
    conf = {
        "spark.sql.extensions": ICEBERG_EXTENSIONS,
        prefix: "org.apache.iceberg.spark.SparkCatalog",
        f"{prefix}.type": catalog_type,
        f"{prefix}.warehouse": warehouse,
        "spark.sql.defaultCatalog": catalog_name,
    }
    if catalog_uri:
        conf[f"{prefix}.uri"] = catalog_uri
    if token:
        conf[f"{prefix}.token"] = token
    if credential:
        conf[f"{prefix}.credential"] = credential  # "client_id:client_secret" for OAuth2
    return conf


def s3a_conf(s3: Mapping[str, Any], catalog_name: str) -> dict[str, str]:
    """s3a settings for S3 or an S3-compatible endpoint; ``s3://`` and ``s3n://`` paths are mapped onto s3a too.

    Keys of ``s3``: ``access_key``, ``secret_key``, optional ``session_token``, ``endpoint`` (default:
    AWS), ``region`` and ``path_style`` (default True). With ``bucket`` the settings are s3a's
    per-bucket ones (``fs.s3a.bucket.<bucket>.*``), which apply to that bucket alone. Iceberg's
    S3FileIO needs the AWS SDK v2, which is not available offline, so the catalog is told to use
    HadoopFileIO (which goes through s3a).
    """
    bucket = s3.get("bucket")
    hadoop = f"spark.hadoop.fs.s3a.bucket.{bucket}" if bucket else "spark.hadoop.fs.s3a"
    conf = {
        f"{hadoop}.access.key": str(s3["access_key"]),
        f"{hadoop}.secret.key": str(s3["secret_key"]),
        f"{hadoop}.path.style.access": str(s3.get("path_style", True)).lower(),
        f"{hadoop}.endpoint.region": str(s3.get("region") or "us-east-1"),
        f"{hadoop}.aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "spark.hadoop.fs.s3.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3n.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        f"spark.sql.catalog.{catalog_name}.io-impl": "org.apache.iceberg.hadoop.HadoopFileIO",
    }
    if endpoint := s3.get("endpoint"):
        conf[f"{hadoop}.endpoint"] = str(endpoint)
        conf[f"{hadoop}.connection.ssl.enabled"] = str(str(endpoint).startswith("https")).lower()
    if token := s3.get("session_token"):
        conf[f"{hadoop}.session.token"] = str(token)
        conf[f"{hadoop}.aws.credentials.provider"] = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
    return conf


class S3WarehouseNeedsS3a(ValueError):
    """An S3 warehouse asked for without the s3a settings Spark here needs to reach it."""


def warehouse_storage_type(catalog_uri: str, warehouse: str, *, token: str | None = None) -> str | None:
    """The ``storage-profile.type`` of a warehouse from the server's Management API, or None when it
    cannot tell (another catalog, no access, not reachable): then nothing is refused."""
    import httpx

    base = catalog_uri.rstrip("/").removesuffix("/catalog")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        response = httpx.get(f"{base}/management/v1/warehouse", headers=headers, timeout=10)
        if response.status_code != 200:
            return None
        for entry in response.json().get("warehouses", []):
            if warehouse in (entry.get("name"), entry.get("id")):
                return (entry.get("storage-profile") or {}).get("type")
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    return None


def refuse_s3_without_s3a(
    catalog_uri: str,
    warehouse: str,
    *,
    token: str | None = None,
    extra_conf: Mapping[str, str] | None = None,
    catalog_name: str = "lakekeeper",
) -> None:
    """Spark here reaches S3 only through Hadoop's s3a (HadoopFileIO): Iceberg's default S3FileIO needs the
    AWS SDK v2, which these jars lack, and would fail at the first table read with a NoClassDefFoundError.
    Say so before the JVM starts, unless the caller chose a FileIO of their own."""
    if f"spark.sql.catalog.{catalog_name}.io-impl" in (extra_conf or {}):
        return
    if warehouse_storage_type(catalog_uri, warehouse, token=token) != "s3":
        return
    raise S3WarehouseNeedsS3a(
        f"warehouse {warehouse!r} stores its tables on S3, which Spark here reaches only through Hadoop's s3a: pass "
        "s3={'endpoint': ..., 'access_key': ..., 'secret_key': ..., 'region': ...} (keys with access to the "
        "bucket; HadoopFileIO). Vended credentials and remote signing need Iceberg's S3FileIO and the AWS SDK v2 "
        "(org.apache.iceberg:iceberg-aws-bundle), which these jars do not include; to use them anyway, add that "
        f"package and set spark.sql.catalog.{catalog_name}.io-impl in extra_conf."
    )


# ---------------------------------------------------------------------------------------------
# the driver: Java, master, loopback


def java_major_version(java: str | Path) -> int | None:
    """The feature version of a ``java`` executable (8 for ``1.8.0_x``, 17 for ``17.0.x``)."""
    try:
        output = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def find_java_home(version: int = JAVA_VERSION) -> str | None:
    """``JAVA_HOME`` for Spark's JVM, or None to keep the environment's ``java`` as it is.

    A set ``$JAVA_HOME`` is the user's choice and wins. Otherwise, when ``java`` on the PATH is not
    Java ``version`` (a newer default JDK, say), the first installed Java ``version`` found in the
    usual JDK folders is returned.
    """
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    on_path = shutil.which("java")
    if on_path and java_major_version(on_path) == version:
        return None
    for home in sorted({candidate for pattern in JAVA_HOME_PATTERNS for candidate in glob.glob(pattern)}):
        java = Path(home) / "bin" / "java"
        if java.is_file() and not Path(home).is_symlink() and java_major_version(java) == version:
            return home
    if on_path is None:
        raise JavaNotFound(f"no Java found to run Spark: install Java {version} (e.g. apt-get install "
                           f"openjdk-{version}-jre-headless) or set $JAVA_HOME")  # fmt: skip
    return None  # another version only: let Spark try it


def spark_master(master: str | None = None) -> str:
    """The master URL: the one given, else ``$LAKEKEEPER_SPARK_MASTER``, else ``local[*]``."""
    return master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER


def prepare_driver_environment() -> None:
    """Environment Spark reads when it launches its JVM: Python, loopback address, Java home."""
    # Python workers must run this interpreter, and Spark must not pick a non-loopback address.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if java_home := find_java_home():
        os.environ["JAVA_HOME"] = java_home


# A JVM whose work is many short queries over little data is done before the JIT's optimizing compiler
# (C2) pays for the CPU it spends: compile with C1 alone, on the driver and on the executors.
C1_ONLY_CONF = {
    "spark.driver.defaultJavaOptions": "-XX:TieredStopAtLevel=1",
    "spark.executor.defaultJavaOptions": "-XX:TieredStopAtLevel=1",
}

# Local mode on a small machine, reachable only from this host.
LOCAL_CONF = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "2",
}


def build_spark_session(
    catalog_uri: str | None,
    warehouse: str,
    *,
    catalog_name: str = "lakekeeper",
    catalog_type: str = "rest",
    master: str | None = None,
    token: str | None = None,
    credential: str | None = None,
    extra_conf: Mapping[str, str] | None = None,
    s3: Mapping[str, Any] | None = None,
    s3_jars: bool | None = None,
    jars_mode: JarsMode | None = None,
    app_name: str = "lakekeeper",
) -> SparkSession:
    """A SparkSession whose default catalog ``catalog_name`` is our Iceberg REST catalog.

    ``catalog_type="hadoop"`` (with a path as ``warehouse``) gives a catalog-free Iceberg setup,
    handy to check the jars alone. Spark loads jars when its JVM starts, once per Python process:
    stop any earlier session first, and expect a second session with other jars not to see them
    (``s3_jars=True`` loads the s3a jars without configuring s3a, for a JVM whose later sessions need them).
    """
    from pyspark.sql import SparkSession  # optional and heavy: only when asked for

    if catalog_type == "rest" and catalog_uri and s3 is None:
        refuse_s3_without_s3a(catalog_uri, warehouse, token=token, extra_conf=extra_conf, catalog_name=catalog_name)
    prepare_driver_environment()
    conf = {
        **LOCAL_CONF,
        **resolve_spark_jars(jars_mode, s3=s3 is not None if s3_jars is None else s3_jars).conf(),
        **catalog_conf(catalog_uri, warehouse, catalog_name=catalog_name, catalog_type=catalog_type,
                       token=token, credential=credential),
        **(s3a_conf(s3, catalog_name) if s3 is not None else {}),
        **(extra_conf or {}),
    }  # fmt: skip
    builder = SparkSession.builder.master(spark_master(master)).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def spark_snippet(catalog_uri: str, warehouse: str, *, catalog_name: str = "lakekeeper") -> str:
    """Copy-paste PySpark code for a user with Maven access to connect to this catalog."""
    conf = {
        "spark.jars.packages": ICEBERG_RUNTIME_PACKAGE,
        **catalog_conf(catalog_uri, warehouse, catalog_name=catalog_name),
    }
    lines = [
        "# fetches the Iceberg runtime from Maven Central; offline, run scripts/build-spark-jars.sh first and use",
        "# lakekeeper_host.engines.spark.build_spark_session, which takes the local jars",
        "from pyspark.sql import SparkSession",
        "",
        "spark = (",
        "    SparkSession.builder.appName('lakekeeper')",
        *(f"    .config({key!r}, {value!r})" for key, value in conf.items()),
        f"    # for an authenticated catalog: .config('spark.sql.catalog.{catalog_name}.token', '<token>')",
        "    .getOrCreate()",
        ")",
        "spark.sql('SHOW NAMESPACES').show()",
    ]
    return "\n".join(lines) + "\n"


def offline_jars_missing() -> list[str]:
    """What this machine lacks to start Spark without Maven Central (empty: it works offline)."""
    missing = []
    if iceberg_runtime_jar() is None:
        missing.append("the Iceberg runtime jar: pip install -e '.[spark]'")
    if shaded_dependency_dir() is None:
        missing.append(f"{' and '.join(SHADED_DEPENDENCY_JARS)}: scripts/build-spark-jars.sh")
    return missing


def shared_session(
    *, s3_jars: bool = True, master: str | None = None, app_name: str = "lakekeeper-tests",
    extra_conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """One SparkSession with every jar (Iceberg, and s3a when available) and no catalog yet.

    Catalogs are added at runtime with :func:`add_catalog`, so a whole test run or pipeline can
    share one JVM across servers and warehouses. ``extra_conf`` comes last (e.g. :data:`C1_ONLY_CONF`).
    """
    from pyspark.sql import SparkSession

    prepare_driver_environment()
    conf = {**LOCAL_CONF, **resolve_spark_jars(None, s3=s3_jars).conf(), "spark.sql.extensions": ICEBERG_EXTENSIONS,
            **(extra_conf or {})}  # fmt: skip
    builder = SparkSession.builder.master(spark_master(master)).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    return session


def add_catalog(
    session: SparkSession,
    catalog_uri: str,
    warehouse: str,
    *,
    catalog_name: str,
    token: str | None = None,
    credential: str | None = None,
    s3: Mapping[str, Any] | None = None,
    extra: Mapping[str, str] | None = None,
) -> str:
    """Register another Iceberg REST catalog on a running session; returns its name.

    s3a settings are scoped to this catalog (Iceberg passes ``spark.sql.catalog.<name>.hadoop.*``
    to the catalog's Hadoop configuration), so catalogs on different endpoints do not interfere.
    """
    if s3 is None:
        refuse_s3_without_s3a(catalog_uri, warehouse, token=token, extra_conf=extra, catalog_name=catalog_name)
    conf = catalog_conf(catalog_uri, warehouse, catalog_name=catalog_name, token=token, credential=credential)
    conf.pop("spark.sql.extensions")
    conf.pop("spark.sql.defaultCatalog")
    if s3 is not None:
        for key, value in s3a_conf(s3, catalog_name).items():
            if key.startswith("spark.hadoop."):
                key = f"spark.sql.catalog.{catalog_name}.hadoop." + key.removeprefix("spark.hadoop.")
            conf[key] = value
    conf.update(extra or {})
    for key, value in conf.items():
        session.conf.set(key, value)
    return catalog_name
