"""Credentials a request carries in its path stay out of the server's log, whatever goes wrong.

The Trino policy endpoint takes its key in the path (``/trino/{key}/allow``): Trino sends no header
to OPA. The request log redacts it; an unexpected failure, whose log line names the request it
happened in, must redact it too (the log is read by more people than may call the policy endpoint).
"""

from __future__ import annotations

import logging

from lakekeeper_host.api.pipeline import Pipeline
from lakekeeper_host.config import load_settings
from lakekeeper_host.metrics import Metrics

KEY = "5b0e1f0c8a9d4e3f9c2b7a6d1e0f4c3b"


def test_an_unexpected_failure_on_the_trino_endpoint_does_not_log_its_key(tmp_path, caplog) -> None:
    settings = load_settings({"LAKEKEEPER__DATA_DIR": str(tmp_path), "LAKEKEEPER__TRINO_OPA__KEY": KEY})
    steps = Pipeline(settings, Metrics())
    with caplog.at_level(logging.ERROR):
        status, body, _ = steps.error_model(RuntimeError("boom"), "POST", f"/trino/{KEY}/allow", "request-1")
    assert status == 500 and KEY not in str(body)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "/trino/<redacted>/allow" in logged
    assert KEY not in logged
