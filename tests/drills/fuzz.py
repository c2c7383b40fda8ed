"""The fuzzing drill: schemathesis requests against a served catalog, checked as a client would.

Every operation of the served OpenAPI documents (``/api-docs/{catalog,management,generic-table}/v1/openapi.json``)
gets generated requests, valid ones (positive) and invalid ones (negative). Path parameters are the
ids of a seeded warehouse, namespace, table, view, user and role for most of them (so requests
reach real code paths, not just the 404 of an unknown id), generated for the rest. Each answer
is checked for what a client relies on:

* no 5xx and no Python traceback in the body;
* every error is an Iceberg ErrorModel ``{"error": {"message", "type", "code"}}`` with ``code`` = status;
* the status is one the document lists, and a documented body validates against its schema
  (schemathesis' ``status_code_conformance`` and ``response_schema_conformance``).

Findings are collected, not raised, so one run reports everything (hypothesis does not shrink).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx
import hypothesis
import jsonschema
import pyarrow as pa
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.errors import FailureGroup
from schemathesis.specs.openapi.checks import response_schema_conformance, status_code_conformance

from lakekeeper_testing.server import create_file_warehouse

APIS = ("catalog", "management", "generic-table")
TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+")
# what changes the seeded state for everyone after it runs last: reads first, then writes, deletes at the end
_METHOD_ORDER = {"get": 0, "head": 0, "post": 1, "put": 1, "delete": 2}
_LAST = ("/deactivate", "/rename", "/move", "/storage")


@dataclass
class Finding:
    operation: str
    problem: str
    status: int
    request: str
    body: str


@dataclass
class FuzzReport:
    api: str
    backend: str
    requests: int = 0
    operations: int = 0
    statuses: Counter = field(default_factory=Counter)
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)
    seconds: float = 0.0
    # the first successful JSON answer of each operation (to compare with the documented schemas)
    samples: dict[str, Any] = field(default_factory=dict)

    def add(self, finding: Finding) -> None:
        # one per operation and kind of problem: the report stays readable, the first instance is kept
        self.findings.setdefault((finding.operation, finding.problem.split(":")[0]), finding)

    def summary(self) -> str:
        lines = [f"{self.api} on {self.backend}: {self.requests} requests to {self.operations} operations "
                 f"in {self.seconds:.0f}s; statuses {dict(sorted(self.statuses.items()))}"]
        for finding in self.findings.values():
            lines.append(f"  {finding.operation}: {finding.problem} (status {finding.status})\n"
                         f"    {finding.request}\n    -> {finding.body[:300]}")
        return "\n".join(lines)


@dataclass
class Seed:
    """The entities generated requests address by their real ids."""

    path_parameters: dict[str, str]
    query: dict[str, str]
    project_id: str


def seed(server_url: str, root: str) -> Seed:
    """A warehouse with a namespace, a table with one snapshot, a view, a user and a role."""
    from pyiceberg.catalog.rest import RestCatalog

    name = f"fuzz-{uuid.uuid4().hex[:8]}"
    warehouse_id = create_file_warehouse(server_url, name, root)
    client = RestCatalog("fuzz", uri=server_url + "/catalog", warehouse=name)
    client.create_namespace("fuzz")
    table = client.create_table("fuzz.t", pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": [1, 2, 3]}))
    with httpx.Client(base_url=server_url, timeout=30) as http:
        prefix = f"/catalog/v1/{warehouse_id}"
        view = http.post(f"{prefix}/namespaces/fuzz/views", json=_view_body("v"))
        view.raise_for_status()
        namespace = http.get(f"{prefix}/namespaces/fuzz", params={"returnUuid": "true"})
        user = http.post("/management/v1/user", json={"id": f"oidc~{name}", "name": "Fuzz", "user-type": "human"})
        role = http.post("/management/v1/role", json={"name": name})
        for response in (namespace, user, role):
            response.raise_for_status()
        project = http.get("/management/v1/project").json()
    ids = {
        "prefix": warehouse_id, "warehouse_id": warehouse_id, "namespace": "fuzz", "table": "t", "view": "v",
        "tabular_id": str(table.metadata.table_uuid), "table_id": str(table.metadata.table_uuid),
        "view_id": view.json()["metadata"]["view-uuid"],
        "namespace_id": namespace.json()["namespace-uuid"],
        "user_id": user.json()["id"], "role_id": role.json()["id"], "member_id": user.json()["id"],
        "member_type": "user", "project_id": project["project-id"], "queue_name": "tabular_purge",
    }  # fmt: skip
    return Seed({k: v for k, v in ids.items() if v}, {"warehouse": name}, project["project-id"])


def _view_body(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "schema": {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long",
                                                                 "required": False}]},
        "view-version": {"version-id": 1, "schema-id": 0, "timestamp-ms": int(time.time() * 1000),
                         "summary": {"engine-name": "fuzz"}, "default-namespace": ["fuzz"],
                         "representations": [{"type": "sql", "dialect": "spark", "sql": "SELECT 1 AS id"}]},
        "properties": {},
    }  # fmt: skip


class Sandbox:
    """Keeps generated file locations inside one directory: the server runs as whoever runs the
    tests (root in CI containers) and a generated warehouse root or table location is a real path."""

    def __init__(self, root: str) -> None:
        self.root = root.rstrip("/")

    def confine(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {key: self.confine(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.confine(item) for item in value]
        if isinstance(value, str) and self._escapes(value):
            digest = hashlib.sha1(value.encode()).hexdigest()[:10]
            return f"file://{self.root}/g{digest}" if value.startswith("file:") else f"{self.root}/g{digest}"
        return value

    def _escapes(self, value: str) -> bool:
        path = value.removeprefix("file://").removeprefix("file:")
        return (value.startswith("file:") or value.startswith("/")) and not (
            path.startswith(self.root + "/") and ".." not in path
        )


def load_document(server_url: str, api: str) -> dict[str, Any]:
    response = httpx.get(f"{server_url}/api-docs/{api}/v1/openapi.json", timeout=30)
    response.raise_for_status()
    return response.json()


def _order(operation: Any) -> tuple:
    method = operation.method.lower()
    last = any(operation.path.endswith(suffix) or suffix + "/" in operation.path for suffix in _LAST)
    # the warehouse's own DELETE after every other delete: the catalog's seeded entities live in it
    return (_METHOD_ORDER.get(method, 1) + (1 if last and method != "delete" else 0),
            operation.path.count("/") * (-1 if method == "delete" else 1), operation.path)


def fuzz(
    server_url: str,
    api: str,
    backend: str,
    seeded: Seed,
    sandbox: Sandbox,
    *,
    examples: int,
    skip: Callable[[Any, Any, requests.Response], str | None] = lambda operation, case, response: None,
    only: Iterable[str] | None = None,
    random_seed: int | None = None,
) -> FuzzReport:
    """Fuzz every operation of one API document with ``examples`` requests each; ``skip`` names a
    known, owned problem of a case (its finding is not reported, the request is counted). Without
    ``random_seed`` every run sends the same requests (hypothesis derandomized); a seed explores others."""
    document = load_document(server_url, api)
    schema = schemathesis.openapi.from_dict(document)
    error_model = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/IcebergErrorResponse", "components": document["components"]}
    )
    report = FuzzReport(api, backend)
    started = time.monotonic()
    session = requests.Session()
    operations = sorted((result.ok() for result in schema.get_all_operations()), key=_order)
    wanted = set(only) if only is not None else None
    for operation in operations:
        label = f"{operation.method.upper()} {operation.path}"
        if wanted is not None and label not in wanted:
            continue
        report.operations += 1
        declared = {p.name for p in operation.path_parameters}
        real = {k: v for k, v in seeded.path_parameters.items() if k in declared}
        query = {k: v for k, v in seeded.query.items() if k in {p.name for p in operation.query}}
        strategies = []
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            strategies.append(operation.as_strategy(mode, path_parameters=real, query=query or None,
                                                    headers={"x-project-id": seeded.project_id}))
            strategies.append(operation.as_strategy(mode, path_parameters=real))
            if real:  # generated ids too: unknown, malformed and hostile ones
                strategies.append(operation.as_strategy(mode))

        run = _runner(operation, label, st.one_of(strategies), examples, server_url, session,
                      sandbox, skip, error_model, report, derandomize=random_seed is None)
        (hypothesis.seed(random_seed)(run) if random_seed is not None else run)()
    session.close()
    report.seconds = time.monotonic() - started
    return report


def _runner(operation, label, strategy, examples, server_url, session, sandbox, skip, error_model, report, *,
            derandomize: bool):
    """One hypothesis run over an operation's cases: each is sent, counted and checked."""

    @settings(max_examples=examples, deadline=None, database=None, derandomize=derandomize, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case):
        if case.body is not None and not isinstance(case.body, (bytes, str)):
            case.body = sandbox.confine(case.body)
        try:
            response = case.call(base_url=server_url, session=session, timeout=60)
        except requests.RequestException as exc:
            report.requests += 1
            report.add(Finding(label, f"transport: {type(exc).__name__}", 0, _describe(case), str(exc)))
            return
        report.requests += 1
        report.statuses[response.status_code] += 1
        if 200 <= response.status_code < 300 and label not in report.samples and response.content:
            try:
                report.samples[label] = response.json()
            except ValueError:
                pass
        if skip(operation, case, response) is not None:
            return
        for problem in problems(case, response, error_model):
            report.add(Finding(label, problem, response.status_code, _describe(case), response.text))

    return run


def problems(case: Any, response: Any, error_model: jsonschema.Draft202012Validator) -> list[str]:
    found = []
    status = response.status_code
    text = response.text
    if status >= 500:
        found.append(f"server error: {status}")
    if TRACEBACK.search(text):
        found.append("traceback in the body")
    if status >= 400 and case.method.upper() != "HEAD":
        try:
            body = json.loads(text)
        except ValueError:
            found.append("error body is not JSON")
        else:
            if not error_model.is_valid(body):
                found.append("error body is not an ErrorModel")
            elif body["error"]["code"] != status:
                found.append(f"ErrorModel code {body['error']['code']} is not the status")
    try:
        case.validate_response(
            response, checks=[not_a_server_error, status_code_conformance, response_schema_conformance]
        )
    except FailureGroup as group:
        for failure in group.exceptions:
            title = getattr(failure, "title", type(failure).__name__)
            if title.startswith("Server error"):
                continue  # counted above
            found.append(f"{title}: {getattr(failure, 'message', '')[:300]}")
    return found


def _describe(case: Any) -> str:
    body = "" if case.body is None else json.dumps(case.body, default=str)[:2000]
    return f"{case.method.upper()} {case.formatted_path} query={case.query} headers={dict(case.headers or {})} {body}"
