"""The authorization benchmark's smoke test: ``bench.authz.run`` at a tiny size writes a complete
result (no speed is asserted: sizes like these on a shared machine mean nothing)."""

from __future__ import annotations

import json

import pytest

from bench.authz import run

pytestmark = pytest.mark.slow


def test_authz_run_measures_both_authorizers_as_the_restricted_user(tmp_path):
    result = run("sqlite", tables=30, seconds=1, samples=2, out=tmp_path, markdown=tmp_path / "AUTHZ.md")
    assert set(result["servers"]) == {"allowall", "openfga"}
    for name, server in result["servers"].items():
        load = server["load_table_c16"]
        assert load["ok"] > 0 and not load["errors_by_status"], (name, load)
    # the restricted user sees every table with allow-all, a tenth of them with OpenFGA
    assert result["servers"]["allowall"]["list_first_page"]["listed"] == 30
    assert result["servers"]["openfga"]["list_first_page"]["listed"] == 3
    assert set(result["summary"]["targets"]) == {"load_table_ge_0.7", "filtered_page_le_3x",
                                                 "batch_check_p50_le_250ms", "batch_check_p99_le_500ms"}
    # the batch check of 1,000 table checks (on OpenFGA) was measured, not left empty
    assert result["summary"]["batch_check_1000_by_name_p50_ms"] is not None
    assert json.loads((tmp_path / f"authz-{result['date'][:10]}-sqlite.json").read_text())["tables"] == 30
    assert "| openfga |" in (tmp_path / "AUTHZ.md").read_text()
