"""A compiled load generator: ``wrk`` (Debian package) driven by a generated Lua script.

The aiohttp driver (``bench.driver``) costs about one core at full load on this 2-core machine, so
its loadTable throughputs measure the driver more than the catalog. ``wrk`` (C, one thread here)
spends a small fraction of that per request. Each request is drawn at random from a list of
precomputed requests (method, path, headers): the tree's tables for loadTable, every read call of
the tree for the read-tree mix, and for SeaweedFS every request carries its precomputed SigV4
headers (valid for 15 minutes, far longer than a step).

wrk checks no bodies; the workloads that verify responses or write stay on the aiohttp driver.
``run_wrk`` returns what the orchestrator records for every step: ok/s, latency percentiles, the
non-2xx/3xx count, and (with ``server_pid``) the server process tree's CPU time per request.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Iterable
from typing import Any

import attrs

from bench.processes import cpu_seconds

RESULT_MARKER = "WRK_RESULT "


@attrs.frozen
class Call:
    """One precomputed request: ``path`` includes the query string."""

    method: str
    path: str
    headers: tuple[tuple[str, str], ...] = ()


def available() -> bool:
    return shutil.which("wrk") is not None


def _lua_string(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid Lua string literal for ASCII text


def script(calls: list[Call]) -> str:
    """A wrk Lua script choosing one of ``calls`` uniformly at random per request, seeded per thread,
    printing a JSON summary line at the end."""
    entries = []
    for call in calls:
        headers = ", ".join(f"[{_lua_string(k)}] = {_lua_string(v)}" for k, v in call.headers)
        entries.append(f"  {{{_lua_string(call.method)}, {_lua_string(call.path)}, {{{headers}}}}},")
    return "\n".join([
        "local calls = {",
        *entries,
        "}",
        "local requests = {}",
        "local counter = 0",
        "function setup(thread)",
        "  counter = counter + 1",
        "  thread:set('seed', counter)",
        "end",
        "function init(args)",
        "  math.randomseed(42 + (seed or 0))",
        "  for i, c in ipairs(calls) do requests[i] = wrk.format(c[1], c[2], c[3]) end",
        "end",
        "function request()",
        "  return requests[math.random(#requests)]",
        "end",
        "function done(summary, latency, requests)",
        "  local e = summary.errors",
        f"  io.write(string.format('{RESULT_MARKER}"
        '{"requests":%d,"duration_us":%d,"bytes":%d,"connect":%d,"read":%d,"write":%d,"status":%d,'
        '"timeout":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f,"max_us":%d}\\n\', '
        "summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout, "
        "latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean, latency.max))",
        "end",
        "",
    ])


def run_wrk(base_url: str, calls: list[Call], *, duration: float, connections: int, threads: int = 1,
            server_pid: int | None = None, warmup: float = 1.0, timeout_s: float = 10.0) -> dict[str, Any]:
    """Run wrk against ``base_url`` (scheme://host:port) for ``duration`` seconds at ``connections``
    open connections; a ``warmup`` run first (unrecorded) fills caches and connection pools."""
    if not calls:
        raise ValueError("no requests to send")
    with tempfile.TemporaryDirectory(prefix="bench-wrk-") as tmp:
        path = os.path.join(tmp, "calls.lua")
        with open(path, "w") as handle:
            handle.write(script(calls))

        def command(seconds: float) -> list[str]:
            return ["wrk", f"-t{threads}", f"-c{max(connections, threads)}", f"-d{max(1, round(seconds))}s",
                    f"--timeout={int(timeout_s)}s", "-s", path, base_url]

        if warmup > 0:
            subprocess.run(command(warmup), capture_output=True, text=True, timeout=warmup + 60)
        server_before = cpu_seconds(server_pid) if server_pid else None
        children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        began = time.perf_counter()
        completed = subprocess.run(command(duration), capture_output=True, text=True, timeout=duration + 120)
        wall = time.perf_counter() - began
        children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_cpu = cpu_seconds(server_pid) - server_before if server_pid else None
    line = next((line for line in completed.stdout.splitlines() if line.startswith(RESULT_MARKER)), None)
    if completed.returncode != 0 or line is None:
        return {"failed": f"wrk exited {completed.returncode}: {(completed.stderr or completed.stdout)[-1500:]}"}
    raw = json.loads(line[len(RESULT_MARKER):])
    seconds = raw["duration_us"] / 1e6
    socket_errors = raw["connect"] + raw["read"] + raw["write"] + raw["timeout"]
    ok = max(raw["requests"] - raw["status"], 0)
    result: dict[str, Any] = {
        "tool": "wrk", "threads": threads, "connections": connections, "duration_s": round(seconds, 2),
        "requests": raw["requests"], "ok": ok, "ok_per_s": round(ok / seconds, 1) if seconds else 0.0,
        "non_2xx_3xx": raw["status"], "socket_errors": socket_errors,
        "p50_ms": round(raw["p50_us"] / 1000, 3), "p90_ms": round(raw["p90_us"] / 1000, 3),
        "p99_ms": round(raw["p99_us"] / 1000, 3), "mean_ms": round(raw["mean_us"] / 1000, 3),
        "max_ms": round(raw["max_us"] / 1000, 3), "bytes_per_request": round(raw["bytes"] / max(raw["requests"], 1)),
        "driver_cpu_s": round((children_after.ru_utime + children_after.ru_stime)
                              - (children_before.ru_utime + children_before.ru_stime), 2),
        "wall_s": round(wall, 2), "distinct_requests": len(calls),
    }
    if server_cpu is not None:
        result["server_cpu_s"] = round(server_cpu, 2)
        if raw["requests"]:
            result["server_cpu_ms_per_request"] = round(server_cpu * 1000 / raw["requests"], 3)
    return result


# ---------------------------------------------------------------------------------------------
# the request lists


def quote(value: str) -> str:
    return urllib.parse.quote(value, safe="")


def namespace_path(namespace: Iterable[str]) -> str:
    return quote("\x1f".join(namespace))


def catalog_base(catalog_url: str, prefix: str | None) -> tuple[str, str]:
    """``(scheme://host:port, path prefix of the spec routes)`` for a catalog URL such as
    ``http://127.0.0.1:8181/catalog``."""
    split = urllib.parse.urlsplit(catalog_url.rstrip("/"))
    base = f"{split.scheme}://{split.netloc}"
    root = f"{split.path}/v1" + (f"/{quote(prefix)}" if prefix else "")
    return base, root


def load_table_calls(root: str, tables: list[list[Any]], *, method: str = "GET",
                     query: str = "") -> list[Call]:
    return [Call(method, f"{root}/namespaces/{namespace_path(ns)}/tables/{quote(name)}{query}")
            for ns, name in tables]


def list_tables_calls(root: str, namespaces: list[list[str]]) -> list[Call]:
    return [Call("GET", f"{root}/namespaces/{namespace_path(ns)}/tables") for ns in namespaces]


def read_tree_calls(root: str, tree: Any, *, with_views: bool = True) -> list[Call]:
    """Every read call of the tree, once each (as ``workloads.read_tree`` cycles through them)."""
    calls: list[Call] = []
    for parent in tree.parents():
        query = f"?parent={quote(chr(0x1F).join(parent))}" if parent else ""
        calls.append(Call("GET", f"{root}/namespaces{query}"))
    for namespace in tree.namespaces:
        calls += [Call("HEAD", f"{root}/namespaces/{namespace_path(namespace)}"),
                  Call("GET", f"{root}/namespaces/{namespace_path(namespace)}")]
    for leaf in tree.leaves:
        calls.append(Call("GET", f"{root}/namespaces/{namespace_path(leaf)}/tables"))
        if with_views:
            calls.append(Call("GET", f"{root}/namespaces/{namespace_path(leaf)}/views"))
    for namespace, table in tree.tables:
        calls += load_table_calls(root, [[namespace, table]], method="HEAD")
        calls += load_table_calls(root, [[namespace, table]])
    if with_views:
        for namespace, view in tree.views:
            path = f"{root}/namespaces/{namespace_path(namespace)}/views/{quote(view)}"
            calls += [Call("HEAD", path), Call("GET", path)]
    return calls


def signed(calls: list[Call], base_url: str, sigv4: dict[str, str]) -> list[Call]:
    """The same calls with precomputed SigV4 headers (service ``s3tables``), as SeaweedFS requires."""
    from bench.client import SigV4Signer

    signer = SigV4Signer(**sigv4)
    out = []
    for call in calls:
        headers = signer.headers(call.method, base_url + call.path, None, None)
        out.append(attrs.evolve(call, headers=(*call.headers, *headers.items())))
    return out
