"""The orchestrator: start servers, run each workload in a driver process, collect one result document.

Every step is recorded under its name; a step that fails records ``{"failed": reason}`` and the run
goes on, so one broken endpoint does not hide every other number.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx

from bench import peers, report, wrk
from bench.dataset import LIST_CURVE_NAMESPACE, Tree
from bench.plan import Plan
from bench.processes import FloorServer, OurServer, SeaweedIceberg, postgres_database, rss_mb, run_driver

log = logging.getLogger("bench")
RESULTS_DIR = Path(__file__).resolve().parent / "results"
WAREHOUSE = "bench"


class Run:
    """One benchmark run against one backend; ``result`` is the JSON document."""

    def __init__(self, plan: Plan, backend: str, out_dir: Path):
        self.plan = plan
        self.backend = backend
        self.out_dir = out_dir
        self.shape = plan.shape.as_dict()
        self.tree = Tree.build(plan.shape)
        self.with_views = True
        self.result: dict[str, Any] = {
            "meta": report.machine_and_versions(backend) | {
                "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "backend": backend,
                "quick": plan.quick, "full_plan": plan.is_full, "plan": plan.as_dict()},
            "server": {}, "workloads": {}, "load_table": {}, "wrk": {}, "commits": {}, "curves": {}, "peers": {},
            "peer_setup": {}, "skipped": {},
        }
        self.cores = os.cpu_count() or 1

    # -- bookkeeping --------------------------------------------------------------------------

    def step(self, section: str, name: str, action: Callable[[], dict[str, Any] | None]) -> dict[str, Any] | None:
        began = time.perf_counter()
        log.info("%s/%s ...", section, name)
        try:
            value = action()
        except Exception as exc:
            log.error("%s/%s failed: %s", section, name, exc)
            value = {"failed": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-2000:]}
        if value is not None:
            if "failed" in value:
                log.error("%s/%s failed: %s", section, name, str(value["failed"])[:500])
            self.result[section][name] = value
        log.info("%s/%s done in %.1fs", section, name, time.perf_counter() - began)
        return value

    def skip(self, name: str, reason: str) -> None:
        log.warning("skipped %s: %s", name, reason)
        self.result["skipped"][name] = reason

    # -- the run ------------------------------------------------------------------------------

    def execute(self) -> dict[str, Any]:
        with self.database() as (db_env, db_info):
            self.db_info = db_info
            data_dir = tempfile.mkdtemp(prefix="lakekeeper-bench-")
            try:
                self.run_ours(db_env, data_dir)
            finally:
                shutil.rmtree(data_dir, ignore_errors=True)
            self.run_peers()
        self.result["summary"], self.result["targets"] = report.summarize(self.result)
        self.result["warnings"] = report.warnings(self.result)
        return self.result

    @contextlib.contextmanager
    def database(self) -> Iterator[tuple[dict[str, str], dict[str, Any]]]:
        if self.backend == "sqlite":
            yield {}, {"kind": "sqlite"}
            return
        with postgres_database() as url:
            self.result["meta"]["versions"]["postgresql"] = report.postgres_version(url)
            yield ({"LAKEKEEPER__PG_DATABASE_URL_WRITE": url, "LAKEKEEPER__PG_DATABASE_URL_READ": url},
                   {"kind": "postgres", "url": url})

    def target(self, server_url: str, name: str = "lakekeeper") -> dict[str, Any]:
        return {"name": name, "catalog_url": server_url + "/catalog", "warehouse": WAREHOUSE}

    def time_embedded_start(self) -> None:
        """The README's quickstart, timed: ``lakekeeper serve`` with no configuration in an empty
        directory (SQLite migrated, bootstrapped, ``demo`` warehouse created), then a restart."""
        data_dir = tempfile.mkdtemp(prefix="lakekeeper-bench-embedded-")
        embedded = OurServer(env={}, data_dir=data_dir)
        try:
            embedded.start()
            self.result["server"]["startup_embedded_first_s"] = embedded.startup_s
            embedded.stop()
            embedded.start()
            self.result["server"]["startup_embedded_s"] = embedded.startup_s
        finally:
            embedded.stop()
            shutil.rmtree(data_dir, ignore_errors=True)

    def run_ours(self, db_env: dict[str, str], data_dir: str) -> None:
        plan = self.plan
        if self.db_info["kind"] == "sqlite":
            self.db_info["path"] = os.path.join(data_dir, "catalog.sqlite")
        if self.db_info["kind"] == "postgres":
            self.time_embedded_start()
        server = OurServer(env=db_env, data_dir=data_dir, workers=1)
        # first start runs the migrations; the second is a plain restart: that is "startup_s"
        server.start()
        self.result["server"]["startup_first_s"] = server.startup_s
        server.stop()
        server.start()
        try:
            self.result["server"]["startup_s"] = server.startup_s
            warehouse_root = os.path.join(data_dir, "warehouse")
            os.makedirs(warehouse_root, exist_ok=True)
            # a fresh PostgreSQL server must be bootstrapped first; embedded ones already are
            httpx.post(f"{server.url}/management/v1/bootstrap", json={"accept-terms-of-use": True}, timeout=30)
            response = httpx.post(f"{server.url}/management/v1/warehouse", timeout=30, json={
                "warehouse-name": WAREHOUSE, "storage-profile": {"type": "file", "root": warehouse_root}})
            response.raise_for_status()
            time.sleep(1.0)
            self.result["server"]["rss_idle_mb"] = rss_mb(server.pid)
            target = self.target(server.url)
            self.probe_views(target)
            shape, views = self.shape, self.with_views
            pid = server.pid

            self.step("workloads", "create_tree", lambda: run_driver(
                "create_tree", {"target": target, "shape": shape, "with_views": views}, server_pid=pid))
            self.load_table_set(target, pid, workers=1)
            self.wrk_ours(server.url, pid, workers=1)
            self.profile_ours(server.url, pid)
            read_tree = self.step("workloads", "read_tree_workers_1", lambda: run_driver(
                "read_tree", {"target": target, "shape": shape, "with_views": views,
                              "concurrency": plan.read_concurrency, "duration": plan.read_tree_s},
                server_pid=pid, sample_rss=True))
            if read_tree and "server_peak_rss_mb" in read_tree:
                self.result["server"]["rss_load_mb"] = read_tree["server_peak_rss_mb"]
            self.step("workloads", "read_update", lambda: run_driver(
                "read_update", {"target": target, "shape": shape, "with_views": views,
                                "rate": plan.read_update_rate, "duration": plan.read_update_s}, server_pid=pid))
            self.step("workloads", "create_commits", lambda: run_driver(
                "create_commits", {"target": target, "shape": shape, "with_views": views,
                                   "table_rate": plan.commit_table_rate, "view_rate": plan.commit_view_rate,
                                   "duration": plan.create_commits_s}, server_pid=pid))
            self.step("workloads", "contention", lambda: run_driver(
                "contention", {"target": target, "shape": shape, "duration": plan.contention_s}, server_pid=pid))
            for concurrency in plan.append_concurrency:
                self.step("commits", f"ours_c{concurrency}", lambda c=concurrency: run_driver(
                    "append_commits", {"target": target, "namespace": [f"bench_append_c{c}"], "concurrency": c,
                                       "duration": plan.append_s, "columns": plan.shape.columns},
                    server_pid=pid))
            self.step("commits", "ours_history", lambda: run_driver(
                "append_commits_long_history", {"target": target, "namespace": ["bench_history"],
                                                "snapshots": plan.history_snapshots, "server_pid": pid,
                                                "duration": plan.history_commit_s, "columns": plan.shape.columns},
                server_pid=pid))
            self.step("curves", "snapshots", lambda: run_driver(
                "snapshot_curve", {"target": target, "points": list(plan.snapshot_points),
                                   "samples": plan.curve_samples}, server_pid=pid))
            self.step("curves", "list_tables", lambda: run_driver(
                "list_curve", {"target": target, "points": list(plan.list_points), "samples": plan.curve_samples,
                               "time_budget": plan.list_time_budget_s, "db": self.db_info}, server_pid=pid))
            self.step("curves", "console_pages", lambda: run_driver(
                "ui_pages", {"target": target, "namespace": list(LIST_CURVE_NAMESPACE), "samples": plan.curve_samples},
                server_pid=pid))
            self.result["server"]["rss_after_workloads_mb"] = rss_mb(server.pid)
        finally:
            server.stop()

        if "sqlcatalog" in plan.peers:
            self.run_sqlcatalog(data_dir)
        else:
            self.skip("sqlcatalog", "not in this plan")

        for workers in plan.workers:
            if workers == 1:
                continue
            multi = OurServer(env=db_env, data_dir=data_dir, workers=workers)
            # step() calls its action at once; the defaults bind this iteration's values anyway
            self.step("server", f"start_workers_{workers}", lambda m=multi: {"startup_s": m.start().startup_s})
            if multi.server is None or multi.server.process is None:
                continue
            try:
                target = self.target(multi.url)
                self.step("workloads", f"read_tree_workers_{workers}", lambda t=target, m=multi: run_driver(
                    "read_tree", {"target": t, "shape": shape, "with_views": views,
                                  "concurrency": plan.read_concurrency, "duration": plan.read_tree_s},
                    server_pid=m.pid))
                self.load_table_set(target, multi.pid, workers=workers)
                self.wrk_ours(multi.url, multi.pid, workers=workers)
                # commits at equal use of the machine: SeaweedFS commits on every core too
                c = max(plan.append_concurrency)
                self.step("commits", f"ours_c{c}_workers_{workers}",
                          lambda t=target, m=multi, c=c, w=workers: run_driver(
                              "append_commits", {"target": t, "namespace": [f"bench_append_c{c}_w{w}"],
                                                 "concurrency": c, "duration": plan.append_s,
                                                 "columns": plan.shape.columns},
                              server_pid=m.pid))
            finally:
                multi.stop()

    # -- wrk ----------------------------------------------------------------------------------

    def wrk_ready(self) -> bool:
        if wrk.available():
            return True
        self.skip("wrk", "wrk is not installed (apt-get install wrk): the compiled-load-generator steps are left out")
        return False

    def wrk_step(self, name: str, base: str, calls: list[wrk.Call], pid: int | None) -> None:
        plan = self.plan
        self.step("wrk", name, lambda: wrk.run_wrk(base, calls, duration=plan.wrk_s, connections=plan.wrk_connections,
                                                   server_pid=pid, warmup=plan.wrk_warmup_s))

    def wrk_ours(self, server_url: str, pid: int, *, workers: int) -> None:
        """Our server under wrk: loadTable, HEAD table, list tables and the read-tree mix."""
        if not self.wrk_ready():
            return
        config = httpx.get(f"{server_url}/catalog/v1/config", params={"warehouse": WAREHOUSE}, timeout=30).json()
        prefix = config["overrides"].get("prefix") or config["defaults"]["prefix"]
        base, root = wrk.catalog_base(server_url + "/catalog", prefix)
        tables = [[ns, name] for ns, name in self.tree.tables]
        calls = {"load_table": wrk.load_table_calls(root, tables),
                 "head_table": wrk.load_table_calls(root, tables, method="HEAD"),
                 "list_tables": wrk.list_tables_calls(root, self.tree.leaves),
                 "read_tree": wrk.read_tree_calls(root, self.tree, with_views=self.with_views)}
        for workload in self.plan.wrk_workloads:
            self.wrk_step(f"ours_workers_{workers}/{workload}", base, calls[workload], pid)

    def wrk_floor(self, floor: FloorServer, prefix: str, workers: int) -> None:
        if not self.wrk_ready():
            return
        base, root = wrk.catalog_base(floor.url + "/catalog", prefix)
        calls = wrk.load_table_calls(root, [[ns, name] for ns, name in self.tree.tables])
        self.wrk_step(f"floor_workers_{workers}/load_table", base, calls, floor.process.pid)

    def wrk_seaweedfs(self, seaweed: SeaweedIceberg, namespace: list[str]) -> None:
        if not self.wrk_ready():
            return
        target = seaweed.target()
        config = httpx.get(f"{target['catalog_url']}/v1/config", params={"warehouse": target["warehouse"]},
                           timeout=30).json()
        prefix = config.get("overrides", {}).get("prefix") or config.get("defaults", {}).get("prefix")
        base, root = wrk.catalog_base(target["catalog_url"], prefix)
        tables = self.peer_tables(namespace)
        calls = {"load_table": wrk.load_table_calls(root, tables),
                 "head_table": wrk.load_table_calls(root, tables, method="HEAD"),
                 "list_tables": wrk.list_tables_calls(root, [namespace])}
        for workload in ("load_table", "head_table", "list_tables"):
            if workload in self.plan.wrk_workloads:
                self.wrk_step(f"seaweedfs/{workload}", base, wrk.signed(calls[workload], base, target["sigv4"]),
                              seaweed.pid)

    def profile_ours(self, server_url: str, pid: int) -> None:
        """py-spy samples our server (1 worker) during one more wrk loadTable run: the CPU breakdown."""
        from bench import profile as breakdown

        if self.plan.profile_s <= 0 or not wrk.available():
            return
        spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")
        if spy is None:
            self.skip("profile", "py-spy is not installed (pip install py-spy): no loadTable CPU breakdown")
            return

        def record() -> dict[str, Any]:
            config = httpx.get(f"{server_url}/catalog/v1/config", params={"warehouse": WAREHOUSE}, timeout=30).json()
            base, root = wrk.catalog_base(server_url + "/catalog",
                                          config["overrides"].get("prefix") or config["defaults"]["prefix"])
            calls = wrk.load_table_calls(root, [[ns, name] for ns, name in self.tree.tables])
            with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
                out = os.path.join(tmp, "stacks.raw")
                spy_run = subprocess.Popen([spy, "record", "--pid", str(pid), "--subprocesses", "--rate", "250",
                                            "--duration", str(int(self.plan.profile_s) + 1), "--format", "raw",
                                            "--output", out, "--nonblocking"],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                time.sleep(0.5)
                run = wrk.run_wrk(base, calls, duration=self.plan.profile_s, connections=self.plan.wrk_connections,
                                  server_pid=pid, warmup=0)
                spy_run.wait(timeout=self.plan.profile_s + 60)
                with open(out) as handle:
                    return {**breakdown.breakdown(handle.read()), "load_table": run}

        self.step("server", "load_table_profile", record)

    def probe_views(self, target: dict[str, Any]) -> None:
        probe = run_driver("views_supported", {"target": target})
        self.result["server"]["views_probe"] = probe
        if not probe.get("supported"):
            self.with_views = False
            self.skip("views", f"view endpoints not served (list views -> {probe.get('status')}: "
                               f"{str(probe.get('body') or probe.get('failed'))[:200]}); "
                               "view calls are left out of every workload")

    def load_table_set(self, target: dict[str, Any], pid: int, *, workers: int) -> None:
        """loadTable at fixed concurrency: ours, the web-stack floor with the same bytes, the DB floor."""
        plan = self.plan
        tables = [[ns, name] for ns, name in self.tree.tables]
        self.step("load_table", f"ours_workers_{workers}", lambda: run_driver(
            "load_table_throughput", {"target": target, "tables": tables, "concurrency": plan.load_concurrency,
                                      "duration": plan.load_table_s}, server_pid=pid))
        namespace, table = self.tree.tables[0]
        body = run_driver("load_table_body", {"target": target, "namespace": namespace, "table": table})
        if "failed" in body:
            self.result["load_table"][f"floor_workers_{workers}"] = {"failed": body["failed"]}
            return
        floor = FloorServer(body=body["body"].encode(), prefix=body["prefix"] or "floor", workers=workers)

        def measure_floor() -> dict[str, Any]:
            floor.start()
            try:
                result = run_driver("load_table_throughput", {
                    "target": self.target(floor.url, "floor"), "tables": tables,
                    "concurrency": plan.load_concurrency, "duration": plan.load_table_s},
                    server_pid=floor.process.pid)
                self.wrk_floor(floor, body["prefix"] or "floor", workers)
            finally:
                floor.stop()
            return {**result, "body_bytes": body["bytes"]}

        self.step("load_table", f"floor_workers_{workers}", measure_floor)
        if workers == 1:
            self.step("load_table", "db_floor", lambda: run_driver("db_floor", {
                "db": self.db_info, "body": body["body"], "concurrency": plan.load_concurrency,
                "duration": plan.db_floor_s}))

    def run_sqlcatalog(self, data_dir: str) -> None:
        if self.db_info["kind"] == "sqlite":
            uri = f"sqlite:///{self.db_info['path']}"
        else:
            uri = self.db_info["url"].replace("postgresql://", "postgresql+psycopg://", 1)
        warehouse = "file://" + os.path.join(data_dir, "sqlcatalog-warehouse")
        os.makedirs(warehouse[len("file://"):], exist_ok=True)
        self.result["peers"]["sqlcatalog"] = {"status": "ran", "uri": uri.split("@")[-1], "in_process": True}
        for concurrency in self.plan.append_concurrency:
            self.step("commits", f"sqlcatalog_c{concurrency}", lambda c=concurrency: run_driver(
                "sqlcatalog_commits", {"uri": uri, "warehouse": warehouse, "concurrency": c,
                                       "duration": self.plan.append_s, "columns": self.plan.shape.columns}))
        self.step("commits", "sqlcatalog_history", lambda: run_driver(
            "sqlcatalog_commits_long_history", {"uri": uri, "warehouse": warehouse,
                                                "snapshots": self.plan.history_snapshots,
                                                "duration": self.plan.history_commit_s,
                                                "columns": self.plan.shape.columns}))

    # -- peers --------------------------------------------------------------------------------

    def run_peers(self) -> None:
        plan = self.plan
        if "seaweedfs" in plan.peers:
            self.run_seaweedfs()
        else:
            self.skip("seaweedfs", "not in this plan (use the full run or --peers)")
        if "lakana" in plan.peers:
            self.run_lakana()
        else:
            self.skip("lakana", "not in this plan (use the full run or --peers)")

    def peer_tables(self, namespace: list[str]) -> list[list[Any]]:
        """The same table population as ours: one namespace, the tree's table count and shape
        (lower-case names: S3 Tables naming rules, which SeaweedFS enforces)."""
        return [[namespace, name.lower()] for _, name in self.tree.tables]

    def populate_peer(self, target: dict[str, Any], namespace: list[str]) -> dict[str, Any]:
        return run_driver("create_flat", {"target": target, "namespace": namespace,
                                          "tables": [name.lower() for _, name in self.tree.tables],
                                          "shape": self.shape})

    def run_seaweedfs(self) -> None:
        plan = self.plan
        try:
            seaweed = SeaweedIceberg(iceberg=True)
            seaweed.start()
        except Exception as exc:
            self.result["peers"]["seaweedfs"] = {"status": "not run", "reason": f"{type(exc).__name__}: {exc}"}
            return
        try:
            seaweed.wait_catalog()
            self.result["peers"]["seaweedfs"] = {"status": "ran", "version": report.seaweed_version(),
                                                 "startup_s": round(seaweed.startup_seconds or 0, 3),
                                                 "rss_idle_mb": rss_mb(seaweed.pid)}
            target = seaweed.target()
            populated = self.step("peer_setup", "seaweedfs_populate",
                                  lambda: self.populate_peer(target, ["bench_peer"]))
            if populated and "failed" not in populated:
                tables = self.peer_tables(["bench_peer"])
                self.step("load_table", "seaweedfs", lambda: run_driver(
                    "load_table_throughput", {"target": target, "tables": tables,
                                              "concurrency": plan.load_concurrency, "duration": plan.load_table_s},
                    server_pid=seaweed.pid))
                self.wrk_seaweedfs(seaweed, ["bench_peer"])
            for concurrency in plan.append_concurrency:
                self.step("commits", f"seaweedfs_c{concurrency}", lambda c=concurrency: run_driver(
                    "append_commits", {"target": target, "namespace": [f"bench_append_c{c}"], "concurrency": c,
                                       "duration": plan.append_s, "columns": plan.shape.columns},
                    server_pid=seaweed.pid))
        finally:
            seaweed.close()

    def run_lakana(self) -> None:
        plan = self.plan
        database_url = None
        if self.db_info["kind"] == "postgres":  # its own database on the same server
            from lakekeeper_testing.services import create_database

            lakana_db = f"lakana_bench_{os.getpid()}"
            database_url = create_database(self.db_info["url"], lakana_db).replace(
                "postgresql://", "postgresql+pg8000://", 1)
        lakana = peers.LakanaServer(database_url=database_url)
        try:
            lakana.start()
        except Exception as exc:
            self.result["peers"]["lakana"] = {"status": "not run", "reason": f"{type(exc).__name__}: {exc}"}
            lakana.close()
            self.drop_lakana_database(database_url)
            return
        try:
            self.result["peers"]["lakana"] = {"status": "ran", "version": lakana.version,
                                              "migrate_s": lakana.migrate_s, "startup_s": lakana.startup_s,
                                              "rss_idle_mb": rss_mb(lakana.pid), "database": lakana.database_kind,
                                              "note": "no HEAD routes, no views; tables only below bronze/silver/gold"}
            target = lakana.target()
            namespace = peers.LAKANA_NAMESPACE
            populated = self.step("peer_setup", "lakana_populate", lambda: self.populate_peer(target, namespace))
            if populated and "failed" not in populated:
                tables = self.peer_tables(namespace)
                self.step("load_table", "lakana", lambda: run_driver(
                    "load_table_throughput", {"target": target, "tables": tables,
                                              "concurrency": plan.load_concurrency, "duration": plan.load_table_s},
                    server_pid=lakana.pid))
                if "load_table" in plan.wrk_workloads and self.wrk_ready():
                    base, root = wrk.catalog_base(target["catalog_url"], target["prefix"])
                    auth = (("authorization", f"Bearer {target['token']}"),)
                    calls = [attrs.evolve(call, headers=auth) for call in wrk.load_table_calls(root, tables)]
                    self.wrk_step("lakana/load_table", base, calls, lakana.pid)
        finally:
            lakana.close()
            self.drop_lakana_database(database_url)

    def drop_lakana_database(self, database_url: str | None) -> None:
        if database_url and self.db_info["kind"] == "postgres":
            from lakekeeper_testing.services import drop_database

            with contextlib.suppress(Exception):
                drop_database(self.db_info["url"], database_url.rsplit("/", 1)[-1])


def result_paths(result: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    stamp = dt.datetime.now().strftime("%Y-%m-%d")
    meta = result["meta"]
    suffix = "-quick" if meta["quick"] else ("" if meta.get("full_plan", True) else "-custom")
    return out_dir / f"{stamp}-{result['meta']['backend']}{suffix}.json", out_dir / "plots"


def markdown_path(result: dict[str, Any], json_path: Path) -> Path:
    """``bench/RESULTS.md`` for a full PostgreSQL run in the default directory (the recorded
    results); a quick, shortened or SQLite run there gets ``<json stem>.md`` beside its JSON so
    it never replaces them; with ``--out DIR`` it is ``DIR/RESULTS.md``."""
    if json_path.parent != RESULTS_DIR:
        return json_path.parent / "RESULTS.md"
    meta = result["meta"]
    if meta.get("full_plan") and meta["backend"] == "postgres":
        return RESULTS_DIR.parent / "RESULTS.md"
    return json_path.with_suffix(".md")


def main_run(args: Any) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    plan = Plan.quick_plan() if args.quick else Plan.full()
    overrides = {key: value for key, value in vars(args).items()
                 if key in ("width", "depth", "tables_per_leaf", "views_per_leaf", "columns", "properties")
                 and value is not None}
    if overrides:
        plan = attrs.evolve(plan, shape=attrs.evolve(plan.shape, **overrides))
    if args.peers is not None:
        plan = attrs.evolve(plan, peers=tuple(p for p in args.peers.split(",") if p))
    if args.seconds is not None:
        plan = plan.shortened(args.seconds)
    for flag, field in (("workers", "workers"), ("snapshot_points", "snapshot_points"), ("list_points", "list_points")):
        if getattr(args, flag, None):
            plan = attrs.evolve(plan, **{field: tuple(int(v) for v in getattr(args, flag).split(",") if v)})
    if args.samples is not None:
        plan = attrs.evolve(plan, curve_samples=args.samples)
    out_dir = Path(args.out) if args.out else RESULTS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    run = Run(plan, args.backend, out_dir)
    began = time.perf_counter()
    result = run.execute()
    result["meta"]["total_s"] = round(time.perf_counter() - began, 1)
    json_path, plot_dir = result_paths(result, out_dir)
    result["plots"] = report.plots(result, plot_dir, stem=json_path.stem)
    json_path.write_text(json.dumps(result, indent=1))
    written = [json_path]
    if args.backend == "postgres" and plan.is_full:
        latest = out_dir / "latest.json"
        latest.write_text(json.dumps(result, indent=1))
        written.append(latest)
    if not args.no_markdown:
        markdown = markdown_path(result, json_path)
        markdown.write_text(report.markdown(result, json_path, markdown.parent))
        written.append(markdown)
    print(json.dumps({"summary": result["summary"], "written": [str(p) for p in written],
                      "total_s": result["meta"]["total_s"]}, indent=1))
    return 0


def main_report(json_file: str) -> int:
    """Re-render plots and RESULTS.md from a saved result (e.g. after editing the report code)."""
    json_path = Path(json_file).resolve()
    result = json.loads(json_path.read_text())
    result["summary"], result["targets"] = report.summarize(result)
    result["warnings"] = report.warnings(result)
    result["plots"] = report.plots(result, json_path.parent / "plots", stem=json_path.stem)
    json_path.write_text(json.dumps(result, indent=1))
    markdown = markdown_path(result, json_path)
    markdown.write_text(report.markdown(result, json_path, markdown.parent))
    print(markdown)
    return 0
