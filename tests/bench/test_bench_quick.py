"""The benchmark's smoke test: ``python -m bench run --quick`` on SQLite writes a complete result.

Every timed step runs half a second (``--seconds 0.5``; the quick plan's are 1 to 3 s): the smoke
test needs every workload to run and report, not numbers. No timing assertions: the numbers of
such a run on a shared machine mean nothing. What a user of the benchmark would notice is checked:
it finishes, writes the JSON with every summary key, RESULTS.md and the plots, and the workloads
actually talked to the catalog.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.report import SUMMARY_KEYS

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bench-results")
    completed = subprocess.run(
        [sys.executable, "-m", "bench", "run", "--quick", "--backend", "sqlite", "--out", str(out),
         "--peers", "sqlcatalog", "--seconds", "0.5"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    [json_file] = out.glob("*-sqlite-quick.json")
    return out, json.loads(json_file.read_text())


def test_result_has_every_summary_key(quick_run):
    _, result = quick_run
    assert set(SUMMARY_KEYS) <= set(result["summary"])
    for key in SUMMARY_KEYS:
        assert result["summary"][key] is None or isinstance(result["summary"][key], (int, float)), key
    assert set(result["targets"]) <= set(result["summary"])


def test_result_records_machine_plan_and_sections(quick_run):
    _, result = quick_run
    meta = result["meta"]
    assert meta["backend"] == "sqlite" and meta["quick"] is True
    assert meta["machine"]["cores"] >= 1 and meta["versions"]["python"]
    for section in ("server", "workloads", "load_table", "commits", "curves", "peers", "skipped"):
        assert section in result, section
    # peers not asked for are skipped with a reason, not silently missing
    assert "seaweedfs" in result["skipped"] and "lakana" in result["skipped"]


def test_server_process_was_measured(quick_run):
    _, result = quick_run
    server = result["server"]
    assert server["startup_s"] > 0
    assert server["rss_idle_mb"] > 0 and server["rss_load_mb"] > 0


def test_sqlcatalog_peer_committed(quick_run):
    _, result = quick_run
    for name, entry in result["commits"].items():
        if name.startswith("sqlcatalog"):
            assert "failed" not in entry, entry.get("failed")
            assert entry["ok"] > 0


def test_markdown_and_plots_written(quick_run):
    out, result = quick_run
    markdown = (out / "RESULTS.md").read_text()
    assert "## Summary against the targets" in markdown
    for key in ("load_table_vs_web_floor", "contention_lost_commits", "startup_s"):
        assert f"`{key}`" in markdown
    for relative in result["plots"].values():
        assert (out / relative).stat().st_size > 1000
        assert f"]({relative})" in markdown


def test_console_pages_were_timed(quick_run):
    out, result = quick_run
    console = result["curves"]["console_pages"]
    assert "failed" not in console, console.get("failed")
    assert console["tables"] == result["curves"]["list_tables"]["points"][-1]["tables"]
    assert {"server", "warehouse", "namespace_first_page", "namespace_last_page", "table"} <= set(console["pages"])
    assert "### Console page times" in (out / "RESULTS.md").read_text()
