"""``python -m bench cpu``: server CPU per request under wrk, and an optional py-spy profile.

A quick, load-insensitive check for a code change: start our server (SQLite or PostgreSQL), create
the tree dataset, drive one or more wrk workloads and print the server process tree's CPU time per
request (``/proc``: user + system of the server and its workers, divided by requests). Throughput
on a shared machine moves with the neighbours' load; CPU per request moves far less.

With ``--baseline DIR`` a second server runs the ``lakekeeper_host`` package found in DIR (say
``git archive main lakekeeper_host | tar -x -C DIR``) on its own database, and the runs alternate
between the two (A B A B ...), so both see the same neighbours; the ratio is the figure to trust.

With ``--baseline-env NAME=VALUE`` (repeatable) the baseline server gets these variables too; without
``--baseline`` it runs this checkout, so one setting is compared with its default
(``--baseline-env LAKEKEEPER__EVENT_LOOP=asyncio``).

With ``--profile FILE`` py-spy samples the server during one extra loadTable run and writes the
collapsed stacks (``--format raw``) to FILE; ``bench.profile`` turns them into the breakdown table
of RESULTS.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import httpx

from bench import wrk
from bench.dataset import Tree, TreeShape
from bench.processes import OurServer, postgres_database, run_driver

WAREHOUSE = "bench"


@contextlib.contextmanager
def our_server(backend: str, *, workers: int = 1, env: dict[str, str] | None = None,
               source: str | None = None) -> Iterator[OurServer]:
    """Our server with the ``bench`` warehouse on a fresh database."""
    data_dir = tempfile.mkdtemp(prefix="lakekeeper-bench-cpu-")
    try:
        with (postgres_database() if backend == "postgres" else contextlib.nullcontext(None)) as url:
            db_env = {"LAKEKEEPER__PG_DATABASE_URL_WRITE": url, "LAKEKEEPER__PG_DATABASE_URL_READ": url} if url else {}
            if source:  # the package in ``source`` shadows the installed (editable) one: first on sys.path
                db_env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.abspath(source),
                                                                     os.environ.get("PYTHONPATH")]))
            server = OurServer(env={**db_env, **(env or {})}, data_dir=data_dir, workers=workers,
                               cwd=os.path.abspath(source) if source else None)
            server.start()
            try:
                root = os.path.join(data_dir, "warehouse")
                os.makedirs(root, exist_ok=True)
                httpx.post(f"{server.url}/management/v1/bootstrap", json={"accept-terms-of-use": True}, timeout=30)
                httpx.post(f"{server.url}/management/v1/warehouse", timeout=30, json={
                    "warehouse-name": WAREHOUSE, "storage-profile": {"type": "file", "root": root}}).raise_for_status()
                yield server
            finally:
                server.stop()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def prefix_of(server_url: str) -> str:
    config = httpx.get(f"{server_url}/catalog/v1/config", params={"warehouse": WAREHOUSE}, timeout=30).json()
    return config["overrides"].get("prefix") or config["defaults"]["prefix"]


def workload_calls(name: str, root: str, tree: Tree) -> list[wrk.Call]:
    tables = [[ns, t] for ns, t in tree.tables]
    if name == "load_table":
        return wrk.load_table_calls(root, tables)
    if name == "head_table":
        return wrk.load_table_calls(root, tables, method="HEAD")
    if name == "list_tables":
        return wrk.list_tables_calls(root, tree.leaves)
    if name == "read_tree":
        return wrk.read_tree_calls(root, tree)
    raise ValueError(f"unknown workload {name}")


def profile(pid: int, seconds: float, out: str, run: Any) -> None:
    """py-spy (from this interpreter's environment) sampling ``pid`` and its workers while ``run()`` runs."""
    spy = shutil.which("py-spy", path=os.path.dirname(sys.executable)) or shutil.which("py-spy")
    if spy is None:
        raise RuntimeError("py-spy not found: pip install py-spy")
    recorder = subprocess.Popen([spy, "record", "--pid", str(pid), "--subprocesses", "--duration",
                                 str(int(seconds) + 1), "--rate", "250", "--format", "raw", "--output", out,
                                 "--nonblocking"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)
    run()
    recorder.wait(timeout=seconds + 60)


@contextlib.contextmanager
def populated(backend: str, workers: int, source: str | None, tree: Tree,
              env: dict[str, str] | None = None) -> Iterator[tuple[OurServer, str, str]]:
    """A server with the tree dataset: ``(server, base URL, spec route root)``."""
    with our_server(backend, workers=workers, source=source, env=env) as server:
        target = {"name": "lakekeeper", "catalog_url": server.url + "/catalog", "warehouse": WAREHOUSE}
        created = run_driver("create_tree", {"target": target, "shape": tree.shape.as_dict(), "with_views": True})
        if created.get("errors_by_status") or "failed" in created:
            raise RuntimeError(f"creating the tree failed: {created.get('errors_by_status') or created['failed']}")
        base, root = wrk.catalog_base(server.url + "/catalog", prefix_of(server.url))
        yield server, base, root


def main(args: Any) -> int:
    tree = Tree.build(TreeShape())
    out: dict[str, Any] = {"backend": args.backend, "workers": args.workers, "seconds": args.seconds,
                           "load_average_start": [round(v, 2) for v in os.getloadavg()]}
    with contextlib.ExitStack() as stack:
        targets = {"current": stack.enter_context(populated(args.backend, args.workers, None, tree))}
        baseline_env = dict(item.split("=", 1) for item in args.baseline_env or ())
        if args.baseline or baseline_env:
            targets["baseline"] = stack.enter_context(populated(args.backend, args.workers, args.baseline, tree,
                                                                env=baseline_env))
        for name in args.workloads.split(","):
            runs: dict[str, list[dict[str, Any]]] = {label: [] for label in targets}
            for _ in range(args.repeat):
                for label, (server, base, root) in targets.items():
                    runs[label].append(wrk.run_wrk(base, workload_calls(name, root, tree), duration=args.seconds,
                                                   connections=args.connections, server_pid=server.pid, warmup=1.0))
            entry: dict[str, Any] = {}
            for label, results in runs.items():
                cpu = [r["server_cpu_ms_per_request"] for r in results if "server_cpu_ms_per_request" in r]
                entry[label] = {"cpu_ms_per_request": cpu, "median_cpu_ms": statistics.median(cpu) if cpu else None,
                                "min_cpu_ms": min(cpu) if cpu else None,
                                "ok_per_s": [r.get("ok_per_s") for r in results],
                                "non_2xx": [r.get("non_2xx_3xx") for r in results],
                                "failed": [r["failed"] for r in results if "failed" in r]}
            if "baseline" in entry and entry["baseline"]["median_cpu_ms"]:
                pairs = zip(entry["current"]["cpu_ms_per_request"], entry["baseline"]["cpu_ms_per_request"],
                            strict=False)
                entry["current_vs_baseline_cpu"] = round(statistics.median(c / b for c, b in pairs), 3)
                # the least disturbed run of each: on a busy machine the minimum is the steadier figure
                entry["current_vs_baseline_min_cpu"] = round(entry["current"]["min_cpu_ms"]
                                                             / entry["baseline"]["min_cpu_ms"], 3)
            out[name] = entry
            print(json.dumps({name: entry}), flush=True)
        if args.profile:
            # alternating: current, baseline, current, baseline (two profiles each, merged per build)
            for round_ in range(2 if "baseline" in targets else 1):
                for label, (server, base, root) in targets.items():
                    path = args.profile if label == "current" else f"{args.profile}.baseline"
                    part = f"{path}.{round_}"
                    calls = workload_calls("load_table", root, tree)
                    profile(server.pid, args.seconds, part,
                            lambda b=base, c=calls: wrk.run_wrk(b, c, duration=args.seconds,
                                                                connections=args.connections, warmup=0))
                    with open(path, "a") as merged, open(part) as handle:
                        merged.write(handle.read())
                    os.unlink(part)
            from bench.profile import breakdown

            for label in targets:
                path = args.profile if label == "current" else f"{args.profile}.baseline"
                with open(path) as handle:
                    out[f"profile_{label}"] = breakdown(handle.read())
            print(json.dumps({k: v for k, v in out.items() if k.startswith("profile_")}), flush=True)
    out["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
    print(json.dumps(out))
    return 0
