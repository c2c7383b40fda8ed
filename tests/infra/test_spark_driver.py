"""Spark's setup in lakekeeper_host.engines.spark: where the Iceberg jars come from, the master URL, Java.

The Java tests use the JDKs installed on the machine (no fake ``java``): the one that checks the
preference for Java 17 needs a second, non-17 JDK and is skipped where there is none. The jar
tests use the real local jars and the real network: whether Maven Central answers decides what
``auto`` must pick when the local jars are incomplete.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lakekeeper_host.engines import spark as spark_setup


def installed_java_homes() -> dict[str, int]:
    homes = {candidate for pattern in spark_setup.JAVA_HOME_PATTERNS for candidate in glob.glob(pattern)}
    versions = {}
    for home in sorted(homes):
        java = Path(home) / "bin" / "java"
        if java.is_file() and not Path(home).is_symlink():
            versions[home] = spark_setup.java_major_version(java)
    return versions


def other_java_home() -> str:
    others = [home for home, version in installed_java_homes().items() if version and version != 17]
    if not others or 17 not in installed_java_homes().values():
        pytest.skip("needs Java 17 and another Java version installed side by side")
    return others[0]


def test_master_defaults_to_local_star_and_is_configurable(monkeypatch):
    monkeypatch.delenv(spark_setup.MASTER_ENV, raising=False)
    assert spark_setup.spark_master() == "local[*]"
    monkeypatch.setenv(spark_setup.MASTER_ENV, "spark://10.0.0.5:7077")
    assert spark_setup.spark_master() == "spark://10.0.0.5:7077"
    assert spark_setup.spark_master("local-cluster[2,1,1024]") == "local-cluster[2,1,1024]"


def test_java_home_set_by_the_user_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert spark_setup.find_java_home() == str(tmp_path)


def test_java_17_is_preferred_over_another_java_on_the_path(monkeypatch):
    other = other_java_home()
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", f"{other}/bin{os.pathsep}{os.environ['PATH']}")
    home = spark_setup.find_java_home()
    assert home is not None and spark_setup.java_major_version(Path(home) / "bin" / "java") == 17


def test_java_17_on_the_path_is_left_alone(monkeypatch):
    java = shutil.which("java")
    if java is None or spark_setup.java_major_version(java) != 17:
        pytest.skip("java on the PATH is not Java 17")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert spark_setup.find_java_home() is None


def test_no_java_at_all_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(spark_setup, "JAVA_HOME_PATTERNS", (str(tmp_path / "jvm" / "*"),))
    with pytest.raises(spark_setup.JavaNotFound, match="install Java 17"):
        spark_setup.find_java_home()


@pytest.mark.spark
@pytest.mark.slow
def test_spark_starts_on_java_17_when_another_java_comes_first(tmp_path):
    """A fresh interpreter (Spark reads JAVA_HOME once per JVM), with the other JDK first on the PATH:
    the session's JVM is Java 17. (The session is not used further: that Spark and Iceberg work on
    this JVM is what every test on the shared session shows.)"""
    other = other_java_home()
    script = textwrap.dedent(f"""
        from lakekeeper_host.engines.spark import build_spark_session
        spark = build_spark_session(None, {str(tmp_path)!r}, catalog_name="local", catalog_type="hadoop")
        print("java", spark.sparkContext._jvm.java.lang.System.getProperty("java.specification.version"))
        spark.stop()
    """)
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    env["PATH"] = f"{other}/bin{os.pathsep}{env['PATH']}"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "java 17" in done.stdout.splitlines()


# ---------------------------------------------------------------------------------------------
# jars: local files offline, Maven packages online


def test_offline_uses_the_local_jar_files():
    jars = spark_setup.resolve_spark_jars("offline")
    assert jars.packages == () and all(Path(jar).is_file() for jar in jars.jars)
    names = [Path(jar).name for jar in jars.jars]
    assert names[0].startswith("iceberg-spark-runtime-3.5_2.12-")
    assert set(spark_setup.SHADED_DEPENDENCY_JARS) <= set(names)
    assert jars.conf() == {"spark.jars": ",".join(jars.jars)}


def test_auto_prefers_complete_local_jars_without_asking_maven(monkeypatch):
    def no_network() -> bool:
        raise AssertionError("auto asked Maven although the local jars are complete")

    monkeypatch.setattr(spark_setup, "maven_reachable", no_network)
    assert spark_setup.resolve_spark_jars("auto") == spark_setup.resolve_spark_jars("offline")


def test_online_uses_maven_coordinates():
    jars = spark_setup.resolve_spark_jars("online", s3=True)
    assert jars.jars == ()
    packages = f"{spark_setup.ICEBERG_RUNTIME_PACKAGE},{spark_setup.HADOOP_AWS_PACKAGE}"
    assert jars.conf() == {"spark.jars.packages": packages}


def test_auto_without_complete_local_jars_goes_to_maven_or_says_what_is_missing(monkeypatch, tmp_path):
    monkeypatch.setenv(spark_setup.JARS_DIR_ENV, str(tmp_path))  # no shaded dependency jars there
    if spark_setup.maven_reachable():
        assert spark_setup.resolve_spark_jars("auto").packages == (spark_setup.ICEBERG_RUNTIME_PACKAGE,)
    else:
        with pytest.raises(spark_setup.SparkJarsError, match="iceberg-shaded-jackson.jar.*online"):
            spark_setup.resolve_spark_jars("auto")
    with pytest.raises(spark_setup.SparkJarsError):
        spark_setup.resolve_spark_jars("offline")
    with pytest.raises(ValueError, match="auto, offline or online"):
        spark_setup.resolve_spark_jars("sometimes")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# the snippet ``lakekeeper serve`` prints


def printed_pyspark_snippet(server) -> str:
    """The plain PySpark block of the connection help the embedded server printed at start."""
    log = server.log_path.read_text()
    block = log.split("PySpark anywhere else", 1)[1].split("\n", 1)[1].split("\nDuckDB", 1)[0]
    return textwrap.dedent(block)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("lakekeeper_server", ["sqlite"], indirect=True)
def test_the_pyspark_snippet_serve_prints_connects_to_it(server, tmp_path):
    snippet = printed_pyspark_snippet(server)
    assert f"'spark.sql.catalog.lakekeeper.uri', '{server.catalog_url}'" in snippet
    # Maven Central is out of reach here: only the jar source changes, every catalog setting is the printed one
    packages = f".config('spark.jars.packages', '{spark_setup.ICEBERG_RUNTIME_PACKAGE}')"
    assert packages in snippet
    local_jars = ",".join(spark_setup.resolve_spark_jars("offline").jars)
    namespace = f"snippet_{tmp_path.name[-12:].replace('-', '_')}".lower()
    script = snippet.replace(packages, f".config('spark.jars', {local_jars!r})") + textwrap.dedent(f"""
        spark.sql("CREATE NAMESPACE {namespace}")
        spark.sql("CREATE TABLE {namespace}.t (id bigint) USING iceberg")
        spark.sql("INSERT INTO {namespace}.t VALUES (1), (2), (3)")
        spark.stop()
    """)
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    if java_home := spark_setup.find_java_home():
        env["JAVA_HOME"] = java_home
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]

    from pyiceberg.catalog.rest import RestCatalog

    catalog = RestCatalog("check", uri=server.catalog_url, warehouse="demo")
    assert catalog.load_table((namespace, "t")).scan().to_arrow().num_rows == 3


def test_readme_shows_the_snippet_serve_prints():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert spark_setup.spark_snippet("http://127.0.0.1:8181/catalog", "demo").rstrip() in readme


def test_shaded_jars_are_looked_for_next_to_a_clean_clone_and_in_the_user_cache(monkeypatch, tmp_path):
    """From a clean clone the README's ``../shared/spark-jars`` (any ``shared/spark-jars`` above the
    checkout or the working directory) and the per-user cache are searched; the error lists them all."""
    checkout = tmp_path / "work" / "lakekeeper"
    checkout.mkdir(parents=True)
    shared = tmp_path / "work" / "shared" / "spark-jars"
    monkeypatch.delenv(spark_setup.JARS_DIR_ENV, raising=False)
    monkeypatch.chdir(checkout)
    monkeypatch.setattr(spark_setup, "DEFAULT_JARS_CACHE", tmp_path / "cache")
    candidates = spark_setup.shaded_dependency_candidates()
    assert shared in candidates and candidates[-1] == tmp_path / "cache" / "spark-jars"

    monkeypatch.setenv(spark_setup.JARS_DIR_ENV, str(tmp_path / "empty"))
    assert spark_setup.shaded_dependency_candidates() == [tmp_path / "empty"]
    with pytest.raises(spark_setup.SparkJarsError, match=r"are in none of .*empty.*build-spark-jars\.sh"):
        spark_setup.resolve_spark_jars("offline")

    shared.mkdir(parents=True)
    for jar in spark_setup.SHADED_DEPENDENCY_JARS:
        (shared / jar).write_bytes(b"")
    monkeypatch.setenv(spark_setup.JARS_DIR_ENV, str(shared))
    assert spark_setup.shaded_dependency_dir() == shared
