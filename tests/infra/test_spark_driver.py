"""Spark's driver setup in lakekeeper_host.spark: master URL and the Java it runs on.

The Java tests use the JDKs installed on the machine (no fake ``java``): the one that checks the
preference for Java 17 needs a second, non-17 JDK and is skipped where there is none.
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

from lakekeeper_host import spark as spark_setup


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
    """A fresh interpreter (Spark reads JAVA_HOME once per JVM), with the other JDK first on the PATH."""
    other = other_java_home()
    script = textwrap.dedent(f"""
        from lakekeeper_host.spark import build_spark_session
        spark = build_spark_session(None, {str(tmp_path)!r}, catalog_name="local", catalog_type="hadoop")
        spark.sql("CREATE TABLE local.db.t (id int) USING iceberg")
        spark.sql("INSERT INTO local.db.t VALUES (1), (2)")
        print("rows", spark.table("local.db.t").count())
        print("java", spark.sparkContext._jvm.java.lang.System.getProperty("java.specification.version"))
        spark.stop()
    """)
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    env["PATH"] = f"{other}/bin{os.pathsep}{env['PATH']}"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rows 2" in done.stdout and "java 17" in done.stdout
