"""``python -m bench run [--backend sqlite|postgres] [--quick] ...`` and ``python -m bench setup-peers``."""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description="Lakekeeper-host catalog benchmark")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run the benchmark and write results")
    run.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    run.add_argument("--quick", action="store_true", help="smoke-test sizes: finishes in under two minutes")
    run.add_argument("--out", help="results directory (default bench/results; RESULTS.md goes next to it)")
    run.add_argument("--peers", help="comma list of peers to run: sqlcatalog,seaweedfs,lakana ('' for none)")
    run.add_argument("--no-markdown", action="store_true", help="do not (re)write RESULTS.md")
    for name in ("width", "depth", "tables-per-leaf", "views-per-leaf", "columns", "properties"):
        run.add_argument(f"--{name}", type=int, help="tree dataset shape")
    run.add_argument("--seconds", type=float,
                     help="run every timed step this long (exercise the full plan's steps quickly; "
                          "results are then marked as shortened and never written to latest.json)")
    run.add_argument("--workers", help="comma list of hypercorn worker counts to measure (default 1,2)")
    run.add_argument("--snapshot-points", help="comma list of snapshot counts for the snapshots curve")
    run.add_argument("--list-points", help="comma list of table counts for the list-tables curve")
    run.add_argument("--samples", type=int, help="sequential requests per curve point")
    authz = commands.add_parser("authz", help="loadTable and list-tables with the OpenFGA authorizer vs allow-all")
    authz.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    authz.add_argument("--tables", type=int, default=1000)
    authz.add_argument("--seconds", type=float, default=15.0, help="loadTable duration per authorizer")
    authz.add_argument("--samples", type=int, default=20, help="list pages timed per authorizer")
    trino = commands.add_parser("trino-opa", help="Trino FilterTables: catalog endpoint vs Rego bundle on OPA")
    trino.add_argument("--backend", choices=("sqlite", "postgres"), default="postgres")
    trino.add_argument("--tables", type=int, default=1000)
    trino.add_argument("--samples", type=int, default=20, help="timed FilterTables requests per way")
    cpu = commands.add_parser("cpu", help="server CPU per request under wrk (quick check of a change), py-spy profile")
    cpu.add_argument("--backend", choices=("sqlite", "postgres"), default="sqlite")
    cpu.add_argument("--workers", type=int, default=1)
    cpu.add_argument("--seconds", type=float, default=10.0)
    cpu.add_argument("--repeat", type=int, default=3)
    cpu.add_argument("--connections", type=int, default=16)
    cpu.add_argument("--workloads", default="load_table",
                     help="comma list: load_table,head_table,list_tables,read_tree")
    cpu.add_argument("--baseline", help="a directory holding another lakekeeper_host package: runs alternate with it")
    cpu.add_argument("--baseline-env", action="append", metavar="NAME=VALUE",
                     help="an environment variable of the baseline server (repeatable); without --baseline "
                          "the baseline is this checkout with these variables")
    cpu.add_argument("--profile", help="write py-spy collapsed stacks of one more loadTable run to this file")
    commands.add_parser("setup-peers", help="install lakana-server into its own venv (for the lakana peer)")
    commands.add_parser("report", help="rewrite RESULTS.md and plots from a result JSON").add_argument("json")
    args = parser.parse_args(argv)
    if args.command == "run":
        from bench.run import main_run

        return main_run(args)
    if args.command == "authz":
        from bench.authz import run

        print(json.dumps(run(args.backend, tables=args.tables, seconds=args.seconds, samples=args.samples)["summary"]))
        return 0
    if args.command == "trino-opa":
        from bench.trino_opa import run as run_trino

        print(json.dumps(run_trino(args.backend, tables=args.tables, samples=args.samples)["summary"]))
        return 0
    if args.command == "cpu":
        from bench.cpu import main as cpu_main

        return cpu_main(args)
    if args.command == "setup-peers":
        from bench.peers import setup_lakana

        print(setup_lakana())
        return 0
    if args.command == "report":
        from bench.run import main_report

        return main_report(args.json)
    return 2


if __name__ == "__main__":
    sys.exit(main())
