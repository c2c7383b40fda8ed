"""The DuckDB lines `lakekeeper serve` prints (issue 25) work as pasted, offline: the Python snippet,
the ``python -m lakekeeper_host.engines.duckdb_util`` command and its ``--print-load`` statements."""

from __future__ import annotations

import shlex
import subprocess
import sys
import textwrap

import duckdb
import pytest

from lakekeeper_testing.server import CatalogServer

pytestmark = pytest.mark.duckdb


@pytest.fixture(scope="module")
def quickstart(lakekeeper_server_factory):
    """The embedded default with its `demo` warehouse, as `lakekeeper serve` starts it for a new user."""
    with lakekeeper_server_factory() as server:
        yield server


def printed_block(server: CatalogServer, heading: str) -> str:
    text = server.log_path.read_text()
    block = text.split(heading, 1)[1].split("\n", 1)[1].split("\n\n", 1)[0]
    return textwrap.dedent(block)


def test_printed_python_snippet_runs_as_pasted(quickstart):
    snippet = printed_block(quickstart, "DuckDB from Python, offline")
    assert f'"{quickstart.catalog_url}", "demo"' in snippet
    scope: dict = {}
    exec(snippet, scope)  # noqa: S102 - the user's copy-paste, verbatim
    con = scope["con"]
    try:
        con.execute("CREATE TABLE lakekeeper.demo.pasted (id INTEGER)")
        con.execute("INSERT INTO lakekeeper.demo.pasted VALUES (1), (2)")
        assert con.execute("SELECT sum(id) FROM lakekeeper.demo.pasted").fetchone() == (3,)
    finally:
        con.close()


def test_printed_shell_command_runs(quickstart):
    text = quickstart.log_path.read_text()
    line = next(line for line in text.splitlines() if line.startswith("DuckDB from a shell: "))
    argv = shlex.split(line.removeprefix("DuckDB from a shell: "))
    assert argv[:3] == ["python", "-m", "lakekeeper_host.engines.duckdb_util"] and argv[-1] == "SHOW ALL TABLES"
    as_printed = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=120)
    assert as_printed.returncode == 0, as_printed.stderr
    statements = [
        "CREATE SCHEMA IF NOT EXISTS lakekeeper.shell",
        "CREATE TABLE lakekeeper.shell.t AS SELECT 42 AS answer",
        "SELECT answer FROM lakekeeper.shell.t",
    ]
    result = subprocess.run([sys.executable, *argv[1:-1], *statements], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "42" in result.stdout


def test_print_load_statements_work_in_a_plain_duckdb(quickstart):
    result = subprocess.run(
        [sys.executable, "-m", "lakekeeper_host.engines.duckdb_util", "--print-load"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    # a DuckDB that may not download anything
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    try:
        for statement in result.stdout.splitlines():
            con.execute(statement)
        attach = printed_block(quickstart, "DuckDB elsewhere").splitlines()[-1]
        assert attach.startswith("ATTACH 'demo' AS lakekeeper")
        con.execute(attach)
        con.execute("CREATE SCHEMA IF NOT EXISTS lakekeeper.plain")
        assert ("plain",) in con.execute("SELECT schema_name FROM duckdb_schemas() WHERE database_name = 'lakekeeper'")\
            .fetchall()
    finally:
        con.close()
