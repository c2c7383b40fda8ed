"""``lakekeeper maintain``: maintain one table or a whole warehouse now, and print the figures.

Two ways, one output:

* through a running server (default, ``--server``): the server's ``table_maintenance`` queue runs
  the tasks with the warehouse/table policy; the command waits for the attempts and prints what
  they recorded in the task log;
* directly (``--catalog-uri``): this process is the Spark driver and runs Iceberg's procedures
  against any Iceberg REST catalog, with the default policy plus ``--policy``.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import urllib.parse
import uuid
from typing import Any

from lakekeeper_host.config import Settings
from lakekeeper_host.engines.spark_maintenance import (
    CatalogAccess,
    MaintenanceError,
    MaintenanceJob,
    SparkJobSettings,
    parse_policy,
    run_job,
    summarize,
)
from lakekeeper_host.errors import CatalogError

FINAL = ("SUCCESS", "FAILED", "CANCELLED")
POLL_SECONDS = 1.0


def maintain(settings: Settings, args: Any) -> int:
    # the output is the figures; request and gateway logs would drown them
    for noisy in ("httpx", "py4j"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        if args.catalog_uri:
            outcomes = run_direct(args)
        else:
            outcomes = run_through_server(settings, args)
    except (MaintenanceError, CatalogError) as exc:
        print(f"lakekeeper: error: {getattr(exc, 'message', None) or exc}", file=sys.stderr)
        return 1
    if outcomes is None:  # --no-wait
        return 0
    if args.json:
        print(json.dumps(outcomes, indent=2))
    else:
        for outcome in outcomes:
            if outcome["error"]:
                print(f"{outcome['table']}: error: {outcome['error']}", file=sys.stderr)
                continue
            print(f"{outcome['table']}: {outcome['message']}")
            for key, value in (outcome["figures"] or {}).items():
                print(f"  {key}: {value}")
    return 1 if any(o["error"] for o in outcomes) else 0


# ---------------------------------------------------------------- directly on Spark


def run_direct(args: Any) -> list[dict[str, Any]]:
    try:
        policy_layer = json.loads(args.policy) if args.policy else {}
    except json.JSONDecodeError as exc:
        raise MaintenanceError(f"--policy is not valid JSON: {exc}") from None
    conf = {}
    for item in args.conf or ():
        key, sep, value = item.partition("=")
        if not sep:
            raise MaintenanceError(f"--conf expects key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    job = MaintenanceJob(
        catalog=CatalogAccess(
            uri=args.catalog_uri, warehouse=args.warehouse, token=args.token, credential=args.credential,
            oauth2_server_uri=args.oauth2_server_uri, scope=args.scope,
        ),
        policy=parse_policy(policy_layer),
        spark=SparkJobSettings(master=args.master or "local[*]", jars_mode=args.jars_mode, conf=conf),
        tables=tuple(_split_name(name) for name in args.table or ()),
    )  # fmt: skip
    return [
        {"table": ".".join(r.table), "message": summarize(r.figures) if r.figures is not None else None,
         "figures": r.figures, "error": r.error, "task-id": None}
        for r in run_job(job)
    ]  # fmt: skip


def _split_name(name: str) -> tuple[str, ...]:
    parts = tuple(name.split("."))
    if len(parts) < 2 or not all(parts):
        raise MaintenanceError(f"--table expects namespace.table, got {name!r}")
    return parts


# ---------------------------------------------------------------- through a server's task queue


def run_through_server(settings: Settings, args: Any) -> list[dict[str, Any]] | None:
    import httpx

    if args.policy or args.conf or args.master:
        raise MaintenanceError("--policy, --conf and --master apply with --catalog-uri; the server uses its own")
    base = (args.server or settings.own_base_uri).rstrip("/")
    headers = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    if args.project_id:
        headers["x-project-id"] = args.project_id
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        try:
            warehouse = _find_warehouse(client, args.warehouse)
            body = {"table-ids": [_table_id(client, warehouse, name) for name in args.table]} if args.table else {}
            runs = _ok(client.post(f"/management/v1/warehouse/{warehouse['id']}/maintenance/run", json=body))["runs"]
            if args.no_wait:
                for run in runs:
                    print(f"{'.'.join(run['entity-name'])}: task {run['task-id']}")
                return None
            return [_wait_for_run(client, warehouse["id"], run, args.timeout) for run in runs]
        except httpx.HTTPError as exc:
            raise MaintenanceError(f"server at {base} unreachable: {exc}") from None


def _ok(response: Any) -> Any:
    if response.status_code >= 400:
        try:
            error = response.json()["error"]
            detail = f"{error['type']}: {error['message']}"
        except (ValueError, KeyError, TypeError):
            detail = response.text[:200]
        request = response.request
        raise MaintenanceError(f"{request.method} {request.url.path} -> {response.status_code} {detail}")
    return response.json() if response.content else None


def _find_warehouse(client: Any, name_or_id: str) -> dict[str, Any]:
    warehouses = _ok(client.get("/management/v1/warehouse"))["warehouses"]
    for warehouse in warehouses:
        if name_or_id in (warehouse["name"], warehouse["id"]):
            return warehouse
    names = ", ".join(sorted(w["name"] for w in warehouses)) or "none"
    raise MaintenanceError(f"warehouse {name_or_id!r} not found (active warehouses: {names})")


def _table_id(client: Any, warehouse: dict[str, Any], name: str) -> str:
    """A table id as given, or the ``table-uuid`` of ``namespace.table`` loaded through the catalog."""
    try:
        return str(uuid.UUID(name))
    except ValueError:
        pass
    *namespace, table = _split_name(name)
    config = _ok(client.get("/catalog/v1/config", params={"warehouse": warehouse["name"]}))
    prefix = {**config.get("defaults", {}), **config.get("overrides", {})}.get("prefix", warehouse["id"])
    path = "/catalog/v1/{}/namespaces/{}/tables/{}".format(
        urllib.parse.quote(prefix, safe=""), urllib.parse.quote("\x1f".join(namespace), safe=""),
        urllib.parse.quote(table, safe=""),
    )  # fmt: skip
    return _ok(client.get(path))["metadata"]["table-uuid"]


def _wait_for_run(client: Any, warehouse_id: str, run: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Poll the task API until the run's attempt (or a retry of it) has finished for good."""
    table = ".".join(run["entity-name"])
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        details = _ok(client.get(f"/management/v1/warehouse/{warehouse_id}/task/by-id/{run['task-id']}",
                                 params={"numAttempts": 1000}))  # fmt: skip
        finished = details["status"] in FINAL
        logs = ([details] if finished else []) + details["attempts"]
        ours = sorted((a for a in logs if a["attempt"] >= run["attempt"]), key=lambda a: a["attempt"])
        success = next((a for a in ours if a["status"] == "SUCCESS"), None)
        if success is not None:
            figures = {k: v for k, v in (success.get("execution-details") or {}).items()
                       if k not in ("table", "spark-master")}  # fmt: skip
            return {"table": table, "message": success.get("message"), "figures": figures, "error": None,
                    "task-id": run["task-id"]}  # fmt: skip
        if finished and ours:
            last = ours[-1]
            error = f"{last['status'].lower()} after {len(ours)} attempt(s): {last.get('message')}"
            return {"table": table, "message": None, "figures": None, "task-id": run["task-id"], "error": error}
        time.sleep(POLL_SECONDS)
    raise MaintenanceError(f"{table}: task {run['task-id']} did not finish within {timeout:.0f}s")
