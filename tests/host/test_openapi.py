"""The OpenAPI documents behind ``/swagger-ui``: valid OpenAPI 3.1, complete, and true to the handlers."""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
import uuid

import httpx
import jsonschema
import pyarrow as pa
import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from lakekeeper_host.api import reads
from lakekeeper_host.app import create_app
from lakekeeper_host.config import load_settings
from lakekeeper_host.plugins import make_plugin_manager

PREFIXES = {
    "catalog": "/catalog/", "management": "/management/", "generic-table": "/lakekeeper/", "trino-opa": "/trino/"
}


@pytest.fixture(scope="module")
def documents(sqlite_server) -> dict[str, dict]:
    """Both documents as the running server serves them."""
    return {
        name: httpx.get(f"{sqlite_server.url}/api-docs/{name}/v1/openapi.json", timeout=30).json()
        for name in PREFIXES
    }


@pytest.fixture(scope="module")
def url_map(tmp_path_factory):
    """The routes a server mounts (an app built in-process; no lifespan needed to read its URL map)."""
    settings = load_settings({"LAKEKEEPER__DATA_DIR": str(tmp_path_factory.mktemp("routes"))})
    app = create_app(settings, make_plugin_manager())
    return app.url_map, app.view_functions


def deref(document: dict, node: dict) -> dict:
    """Follow ``$ref`` (``#/components/...``) inside the document."""
    while "$ref" in node:
        target = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def operations(document: dict):
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def openapi_path(rule: str) -> str:
    return re.sub(r"<(?:[a-z]+:)?(\w+)>", r"{\1}", rule)


@pytest.mark.parametrize("name", list(PREFIXES))
def test_documents_are_valid_openapi_3_1(documents, name):
    document = documents[name]
    assert document["openapi"] == "3.1.0"
    validate(document, cls=OpenAPIV31SpecValidator)


@pytest.mark.parametrize("name", list(PREFIXES))
def test_every_served_route_is_documented_and_nothing_else(documents, url_map, name):
    rules, _ = url_map
    served: set[tuple[str, str]] = set()
    for rule in rules.iter_rules():
        if rule.rule.startswith(PREFIXES[name]):
            served |= {(openapi_path(rule.rule), m.lower()) for m in rule.methods - {"OPTIONS", "HEAD"}}
    # HEAD is an operation of its own only where the read lane answers it (existence checks)
    served |= {(openapi_path(r.rule), "head") for r in reads.ROUTES if "HEAD" in r.methods
               and r.rule.startswith(PREFIXES[name])}
    documented = {(path, method) for path, method, _ in operations(documents[name])}
    assert documented == served
    ids = [operation["operationId"] for _, _, operation in operations(documents[name])]
    assert len(ids) == len(set(ids))


def test_every_operation_answers_errors_with_the_error_model(documents, sqlite_server):
    for document in documents.values():
        assert set(deref(document, document["components"]["schemas"]["ErrorModel"])["required"]) == {
            "message", "type", "code"}
        for path, method, operation in operations(document):
            for status in ("4XX", "5XX"):
                schema = deref(document, operation["responses"][status])["content"]["application/json"]["schema"]
                assert deref(document, deref(document, schema)["properties"]["error"]) == \
                    document["components"]["schemas"]["ErrorModel"], (path, method, status)

    # what the server really answers on failure fits the documented schema, on both sides of the read lane
    catalog = documents["catalog"]
    validator = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/IcebergErrorResponse", "components": catalog["components"]}
    )
    prefix = httpx.get(f"{sqlite_server.url}/catalog/v1/config", params={"warehouse": "demo"}).json()["defaults"][
        "prefix"]
    failures = [
        httpx.get(f"{sqlite_server.url}/catalog/v1/{prefix}/namespaces", params={"pageSize": "many"}),  # read lane
        httpx.get(f"{sqlite_server.url}/catalog/v1/{prefix}/namespaces/nowhere/tables/none"),  # read lane
        httpx.delete(f"{sqlite_server.url}/catalog/v1/{prefix}/namespaces/nowhere"),  # Quart
        httpx.get(f"{sqlite_server.url}/management/v1/warehouse/not-a-uuid"),
    ]
    assert [response.status_code for response in failures] == [400, 404, 404, 404]
    for response in failures:
        validator.validate(response.json())


def test_catalog_operations_document_their_parameters_and_statuses(documents):
    catalog = documents["catalog"]
    by_id = {operation["operationId"]: operation for _, _, operation in operations(catalog)}

    def parameters(operation_id: str) -> dict[tuple[str, str], dict]:
        found = [deref(catalog, p) for p in by_id[operation_id]["parameters"]]
        return {(p["in"], p["name"].lower()): p for p in found}

    def statuses(operation_id: str) -> set[str]:
        return set(by_id[operation_id]["responses"]) - {"4XX", "5XX"}

    list_tables = parameters("listTables")
    assert {("query", "pagetoken"), ("query", "pagesize"), ("query", "returnuuids")} <= set(list_tables)
    assert list_tables[("query", "pagesize")]["schema"]["type"] == "integer"
    assert ("query", "parent") in parameters("listNamespaces")
    assert {("query", "recursive"), ("query", "force"), ("query", "purge")} <= set(parameters("dropNamespace"))
    drop_table = parameters("dropTable")
    assert drop_table[("query", "purgerequested")]["schema"]["default"] is True

    load_table = parameters("loadTable")
    assert {("query", "snapshots"), ("header", "x-iceberg-access-delegation"), ("header", "if-none-match")} <= set(
        load_table)
    assert statuses("loadTable") == {"200", "304"}
    assert statuses("tableExists") == statuses("namespaceExists") == statuses("viewExists") == {"204"}
    assert statuses("dropTable") == statuses("dropView") == statuses("renameTable") == {"204"}
    assert ("header", "idempotency-key") in parameters("createTable")
    assert ("header", "idempotency-key") not in parameters("loadTable")
    for operation_id in by_id:
        assert ("header", "x-project-id") in parameters(operation_id)


# ---------------------------------------------------------------- the tables in api/docs.py vs the handlers

_QUERY_READ = re.compile(r"(?:query_bool|query_int|_list_arg|args\.get|args\.getlist|\.flag|\.number)\(\s*\"([^\"]+)\"")
_ACCESS_READ = re.compile(r"x-iceberg-access-delegation|ACCESS_DELEGATION_HEADER|req\.access\b")


def handler_functions(view) -> list:
    """The view and what it runs of its own: helpers of its module (a read route's view unwraps to its
    handler in api/reads.py)."""
    todo, found = [inspect.unwrap(view)], []
    while todo:
        function = todo.pop()
        if function in found:
            continue
        found.append(function)
        module = inspect.getmodule(function)
        source = inspect.getsource(function)
        for name in re.findall(r"\b(\w+)\(", source):
            helper = getattr(module, name, None)
            if inspect.isfunction(helper) and helper.__module__ == module.__name__:
                todo.append(helper)
    return found


def served(url_map, name: str):
    """(rule, its handler functions, their source) of every route under one API's prefix."""
    rules, views = url_map
    for rule in rules.iter_rules():
        if rule.rule.startswith(PREFIXES[name]):
            functions = handler_functions(views[rule.endpoint])
            yield rule, functions, "\n".join(inspect.getsource(f) for f in functions)


def success_statuses(function) -> set[int]:
    """Statuses the function's ``json_response`` / ``empty`` / ``Reply`` calls can answer."""
    codes: set[int] = set()

    def literal(node) -> set[int]:
        if isinstance(node, ast.IfExp):
            return literal(node.body) | literal(node.orelse)
        return {node.value} if isinstance(node, ast.Constant) and isinstance(node.value, int) else set()

    for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(function)))):
        if isinstance(node, ast.Name) and node.id == "NO_CONTENT":
            codes.add(204)
        if not isinstance(node, ast.Call):
            continue
        name = ast.unparse(node.func)
        status = next((kw.value for kw in node.keywords if kw.arg == "status"), None)
        if name == "json_response":
            status = status or (node.args[1] if len(node.args) > 1 else None)
            codes |= literal(status) if status is not None else {200}
        elif name == "empty":
            codes |= literal(node.args[0]) if node.args else {204}
        elif name == "Reply":
            codes |= literal(node.args[0])
        elif name == "Reply.json":
            codes.add(200)
    return codes


@pytest.mark.parametrize("name", list(PREFIXES))
def test_documented_parameters_and_statuses_are_what_the_handlers_read_and_answer(documents, url_map, name):
    document = documents[name]
    for rule, functions, source in served(url_map, name):
        documented = document["paths"][openapi_path(rule.rule)]
        methods = [m.lower() for m in rule.methods - {"OPTIONS", "HEAD"}]
        if "get" in methods and "head" in documented:
            methods.append("head")
        params = [deref(document, p) for m in methods for p in documented[m]["parameters"]]
        query = {p["name"] for p in params if p["in"] == "query"}
        headers = {p["name"].lower() for p in params if p["in"] == "header"}
        responses = {int(s) for m in methods for s in documented[m]["responses"] if s.isdigit()}
        where = f"{rule.endpoint} ({rule.rule})"
        assert query == set(_QUERY_READ.findall(source)), where
        assert ("x-iceberg-access-delegation" in headers) == bool(_ACCESS_READ.search(source)), where
        assert ("if-none-match" in headers) == ("if-none-match" in source), where
        assert responses == set().union(*map(success_statuses, functions)), where


# ---------------------------------------------------------------- bodies and answers


def validator(document: dict, schema: dict) -> jsonschema.Draft202012Validator:
    """A validator for one documented schema, its ``$ref``s resolved inside the document."""
    return jsonschema.Draft202012Validator({**schema, "components": document["components"]})


def body_schema(document: dict, path: str, method: str = "post") -> dict:
    return document["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"]


def answer_schema(document: dict, path: str, method: str = "get") -> dict:
    return document["paths"][path][method]["responses"]["200"]["content"]["application/json"]["schema"]


@pytest.mark.parametrize("name", list(PREFIXES))
def test_operations_that_read_a_body_document_it(documents, url_map, name):
    document = documents[name]
    for rule, _, source in served(url_map, name):
        for method in {m.lower() for m in rule.methods} & {"post", "put"}:
            operation = document["paths"][openapi_path(rule.rule)][method]
            reads_body = "json_body(" in source
            assert ("requestBody" in operation) == reads_body, f"{rule.endpoint} ({rule.rule})"
            if reads_body:
                assert set(operation["requestBody"]["content"]) == {"application/json"}


def test_documented_bodies_accept_what_clients_send_and_refuse_what_the_server_refuses(documents):
    management, catalog = documents["management"], documents["catalog"]
    seed = {  # the S3 warehouse of ../shared/seeds/003 (Fluss), verbatim but for the placeholders
        "warehouse-name": "my-warehouse",
        "project-id": "00000000-0000-0000-0000-000000000000",
        "storage-profile": {"type": "s3", "bucket": "fluss", "key-prefix": "iceberg",
                            "endpoint": "http://minio:9000", "region": "us-east-1", "path-style-access": True},
        "storage-credential": {"type": "s3", "credential-type": "access-key",
                               "aws-access-key-id": "key", "aws-secret-access-key": "secret"},
    }  # fmt: skip
    create_warehouse = validator(management, body_schema(management, "/management/v1/warehouse"))
    create_warehouse.validate(seed)
    create_warehouse.validate({"warehouse-name": "w", "storage-profile": {"type": "file", "root": "/data"}})
    for broken in (
        {**seed, "warehouse-name": 3},
        {**seed, "storage-profile": {"type": "hdfs", "root": "/x"}},  # no such storage type
        {**seed, "storage-credential": {"type": "s3", "credential-type": "access-key"}},  # no keys
        {"storage-profile": seed["storage-profile"]},  # no name
    ):
        assert not create_warehouse.is_valid(broken), broken

    from pyiceberg.catalog.rest import CreateTableRequest
    from pyiceberg.partitioning import UNPARTITIONED_PARTITION_SPEC
    from pyiceberg.schema import Schema
    from pyiceberg.table.sorting import UNSORTED_SORT_ORDER
    from pyiceberg.types import LongType, NestedField

    sent = CreateTableRequest(  # what PyIceberg's RestCatalog.create_table posts
        name="t", location=None, schema=Schema(NestedField(1, "id", LongType(), required=False)),
        partition_spec=UNPARTITIONED_PARTITION_SPEC, write_order=UNSORTED_SORT_ORDER, properties={"a": "b"},
    )  # fmt: skip
    create_table = validator(catalog, body_schema(catalog, "/catalog/v1/{prefix}/namespaces/{namespace}/tables"))
    create_table.validate(json.loads(sent.model_dump_json()))
    assert not create_table.is_valid({"schema": {"type": "struct", "fields": []}})  # no name


def test_documented_answers_describe_what_the_server_answers(documents, sqlite_server, tmp_path):
    """Real answers of the running server, validated against the schemas the document gives them."""
    from pyiceberg.catalog.rest import RestCatalog

    from lakekeeper_testing.server import create_file_warehouse
    from tests.management.helpers import create_view

    catalog_doc = documents["catalog"]
    name = f"docs-{uuid.uuid4().hex[:8]}"
    warehouse_id = create_file_warehouse(sqlite_server.url, name, str(tmp_path))
    client = RestCatalog("docs", uri=sqlite_server.catalog_url, warehouse=name)
    client.create_namespace("docs")
    table = client.create_table("docs.t", pa.schema([("id", pa.int64())]))
    table.append(pa.table({"id": [1, 2]}))
    base = f"{sqlite_server.url}/catalog/v1"
    table_path = "/catalog/v1/{prefix}/namespaces/{namespace}/tables/{table}"
    answers = {
        "/catalog/v1/config": httpx.get(f"{base}/config", params={"warehouse": name}),
        "/catalog/v1/{prefix}/namespaces": httpx.get(f"{base}/{warehouse_id}/namespaces"),
        "/catalog/v1/{prefix}/namespaces/{namespace}": httpx.get(f"{base}/{warehouse_id}/namespaces/docs"),
        "/catalog/v1/{prefix}/namespaces/{namespace}/tables": httpx.get(
            f"{base}/{warehouse_id}/namespaces/docs/tables"
        ),
        table_path: httpx.get(f"{base}/{warehouse_id}/namespaces/docs/tables/t"),
    }
    with httpx.Client(timeout=30) as http:
        create_view(http, f"{base}/{warehouse_id}", "docs", "v")
    answers["/catalog/v1/{prefix}/namespaces/{namespace}/views"] = httpx.get(
        f"{base}/{warehouse_id}/namespaces/docs/views"
    )
    answers["/catalog/v1/{prefix}/namespaces/{namespace}/views/{view}"] = httpx.get(
        f"{base}/{warehouse_id}/namespaces/docs/views/v"
    )
    for path, response in answers.items():
        assert response.status_code == 200, (path, response.text)
        validator(catalog_doc, answer_schema(catalog_doc, path)).validate(response.json())
    assert answers[table_path].json()["metadata"]["snapshots"], "the validated answer has a snapshot to check"
    # a completed scan plan names its files' format in the spec's lower case (found by tests/drills: the
    # schema taken from pyiceberg's enum said PARQUET)
    plan = httpx.post(f"{base}/{warehouse_id}/namespaces/docs/tables/t/plan", json={})
    assert plan.status_code == 200 and plan.json()["file-scan-tasks"], plan.text
    plan_path = table_path + "/plan"
    validator(catalog_doc, answer_schema(catalog_doc, plan_path, "post")).validate(plan.json())
    table_schema = validator(catalog_doc, answer_schema(catalog_doc, table_path))
    assert not table_schema.is_valid({"metadata": {"format-version": 2}})  # not vacuous


def test_documented_management_answers_describe_what_the_server_answers(documents, sqlite_server, tmp_path):
    document = documents["management"]
    base = f"{sqlite_server.url}/management/v1"
    name = f"docs-{uuid.uuid4().hex[:8]}"
    calls = [  # (documented path, method, status, the call)
        ("/management/v1/info", "get", 200, lambda: httpx.get(f"{base}/info")),
        ("/management/v1/project", "post", 201, lambda: httpx.post(f"{base}/project", json={"project-name": name})),
        ("/management/v1/project", "get", 200, lambda: httpx.get(f"{base}/project")),
        ("/management/v1/project-list", "get", 200, lambda: httpx.get(f"{base}/project-list")),
        ("/management/v1/warehouse", "post", 201, lambda: httpx.post(f"{base}/warehouse", json={
            "warehouse-name": name, "storage-profile": {"type": "file", "root": str(tmp_path)},
            "delete-profile": {"type": "soft", "expiration-seconds": 3600}})),
        ("/management/v1/warehouse", "get", 200, lambda: httpx.get(f"{base}/warehouse")),
        ("/management/v1/user", "post", 201, lambda: httpx.post(f"{base}/user", json={
            "id": f"oidc~{name}", "name": "Docs", "user-type": "human", "email": "docs@example.com"})),
        ("/management/v1/user", "get", 200, lambda: httpx.get(f"{base}/user")),
        ("/management/v1/role", "post", 201, lambda: httpx.post(f"{base}/role", json={"name": name})),
        ("/management/v1/role", "get", 200, lambda: httpx.get(f"{base}/role")),
    ]  # fmt: skip
    for path, method, status, call in calls:
        response = call()
        assert response.status_code == status, (path, method, response.text)
        schema = document["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
        validator(document, schema).validate(response.json())
    warehouse = deref(document, {"$ref": "#/components/schemas/Warehouse"})
    assert not validator(document, warehouse).is_valid({"id": "x", "name": "w"})  # not vacuous


@pytest.mark.parametrize("name", list(PREFIXES))
def test_operations_that_answer_json_document_its_schema(documents, url_map, name):
    """Every handler that answers a JSON body has its answer's schema in the document (so the fuzzing
    drill, tests/drills, validates what it answers)."""
    document = documents[name]
    for rule, _, source in served(url_map, name):
        if "json_response(" not in source and "Reply.json" not in source:
            continue
        for method in {m.lower() for m in rule.methods} - {"options", "head"}:
            responses = document["paths"][openapi_path(rule.rule)][method]["responses"]
            assert any("content" in responses[status] for status in ("200", "201", "202") if status in responses), \
                f"{method.upper()} {rule.rule} ({rule.endpoint})"
