"""Fuzzing drill (issue 24): schemathesis against the served catalog and management OpenAPI documents.

The whole drill (``pytest tests/drills/test_fuzz.py``) fuzzes both APIs on the embedded SQLite and
on PostgreSQL; ``LAKEKEEPER_FUZZ_EXAMPLES`` sets the requests per operation (default 20, about five
minutes on two cores); every run sends the same requests unless ``LAKEKEEPER_FUZZ_SEED``
picks other ones. The fast suite runs a three-request-per-operation subset on SQLite. Each test prints
its request count (``-s``); docs/drills.md ("Fuzzing") records a run. What the checks are:
``tests/drills/fuzz.py``.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("schemathesis", reason="schemathesis is in the test extra: pip install -e '.[test]'")

from tests.drills.fuzz import APIS, Sandbox, fuzz, seed  # noqa: E402

# Spark maintenance jobs are drivers of their own (a JVM each): out of scope for request fuzzing
SERVER_ENV = {"LAKEKEEPER__TASK_TABLE_MAINTENANCE_WORKERS": "0"}
DRILL_EXAMPLES = int(os.environ.get("LAKEKEEPER_FUZZ_EXAMPLES", "20"))
DRILL_SEED = int(os.environ["LAKEKEEPER_FUZZ_SEED"]) if os.environ.get("LAKEKEEPER_FUZZ_SEED") else None


def allow_all_keeps_no_grants(operation, case, response) -> str | None:
    """The drill's servers run the allow-all authorizer, whose permissions and Grants APIs answer the
    grant calls with 501 by contract (docs/authorization.md); any other 5xx is a finding."""
    grant_call = "/permissions/" in operation.path or "/grants" in operation.path
    if response.status_code != 501 or not grant_call:
        return None
    try:
        kind = response.json()["error"]["type"]
    except (ValueError, KeyError, TypeError):
        return None
    keeps_none = kind in ("NotImplemented", "GrantListingNotImplemented")
    return "the allow-all authorizer keeps no grants" if keeps_none else None


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fuzz_server(request, lakekeeper_server_factory):
    # a database of its own: the fuzzer renames, deactivates and deletes whatever it is given ids of
    server = lakekeeper_server_factory(SERVER_ENV, backend=request.param)
    yield server
    server.close()


@pytest.fixture(scope="module")
def embedded_server(lakekeeper_server_factory):
    server = lakekeeper_server_factory(SERVER_ENV)
    yield server
    server.close()


def run_drill(server, api: str, tmp_path_factory, examples: int, random_seed: int | None = None):
    sandbox = str(tmp_path_factory.mktemp(f"fuzz-{api}"))
    report = fuzz(server.url, api, server.backend, seed(server.url, sandbox), Sandbox(sandbox),
                  examples=examples, random_seed=random_seed, skip=allow_all_keeps_no_grants)
    print("\n" + report.summary())
    assert report.requests >= report.operations > 0
    assert not report.findings, report.summary()
    return report


@pytest.mark.drill_full
@pytest.mark.parametrize("api", APIS)
def test_fuzz_drill(fuzz_server, api, tmp_path_factory):
    run_drill(fuzz_server, api, tmp_path_factory, DRILL_EXAMPLES, DRILL_SEED)


@pytest.mark.drill_subset
@pytest.mark.parametrize("api", APIS)
def test_fuzz_subset(embedded_server, api, tmp_path_factory):
    run_drill(embedded_server, api, tmp_path_factory, 3)
