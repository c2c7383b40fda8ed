"""The workloads, run inside the driver process (``bench.driver``); each returns a JSON-able dict.

Modelled on apache/polaris-tools ``benchmarks`` (CreateTreeDataset, ReadTreeDataset,
ReadUpdateTreeDataset, CreateCommits, WeightedWorkloadOnTreeDataset), plus the cost curves, the
floors and the peers' commit workloads.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from typing import Any

from bench import dataset
from bench.client import RestCatalogClient
from bench.driver import closed_loop, open_loop
from bench.stats import Recorder, summarize_latencies

# Statuses that mean "this catalog does not implement the operation".
UNSUPPORTED = (404, 405, 406, 501)


def _tree(shape: dict[str, int]) -> dataset.Tree:
    return dataset.Tree.build(dataset.TreeShape(**shape))


async def _bounded(concurrency: int, jobs: list[Any]) -> list[Any]:
    """Await coroutine ``jobs`` with at most ``concurrency`` running at once."""
    gate = asyncio.Semaphore(concurrency)

    async def one(job):
        async with gate:
            return await job

    return await asyncio.gather(*(one(job) for job in jobs))


# ---------------------------------------------------------------------------------------------
# probes


async def views_supported(target: dict[str, Any]) -> dict[str, Any]:
    """Whether ``target`` serves the view endpoints (list views on a namespace that exists)."""
    async with RestCatalogClient(target, concurrency=1) as client:
        namespace = ["bench_probe"]
        await client.create_namespace(namespace, {}, ok=(200, 409))
        status, body = await client.list_views(namespace)
        return {"supported": status == 200, "status": status, "body": body[:300].decode(errors="replace")}


async def load_table_body(target: dict[str, Any], namespace: list[str], table: str) -> dict[str, Any]:
    """The exact loadTable response bytes (for the web-stack floor) and their size."""
    async with RestCatalogClient(target, concurrency=1) as client:
        status, payload, headers = await client.raw(
            "GET", client.url(f"/namespaces/{dataset_ns(namespace)}/tables/{table}"))
        if status != 200:
            raise RuntimeError(f"loadTable {namespace}.{table} -> {status}: {payload[:300]!r}")
        return {"body": payload.decode(), "bytes": len(payload), "etag": headers.get("ETag") or headers.get("etag"),
                "prefix": client.prefix}


def dataset_ns(namespace: list[str]) -> str:
    from bench.client import encode_namespace

    return encode_namespace(namespace)


# ---------------------------------------------------------------------------------------------
# CreateTreeDataset


async def create_tree(target: dict[str, Any], shape: dict[str, int], *, with_views: bool = True,
                      namespace_concurrency: int = 20, table_concurrency: int = 20,
                      view_concurrency: int = 10) -> dict[str, Any]:
    """Create every namespace (level by level), then the tables, then the views."""
    tree = _tree(shape)
    recorder = Recorder()
    async with RestCatalogClient(target, recorder, concurrency=table_concurrency) as client:
        recorder.start()
        by_level: dict[int, list[list[str]]] = {}
        for namespace in tree.namespaces:
            by_level.setdefault(len(namespace), []).append(namespace)
        for level in sorted(by_level):
            await _bounded(namespace_concurrency, [
                client.create_namespace(ns, dataset.namespace_body(ns, tree.shape)["properties"])
                for ns in by_level[level]])
        await _bounded(table_concurrency, [
            client.create_table(ns, dataset.table_body(name, tree.shape)) for ns, name in tree.tables])
        view_note = None
        if with_views and tree.views:
            await _bounded(view_concurrency, [
                client.create_view(ns, dataset.view_body(ns, name, tree.shape)) for ns, name in tree.views])
        elif tree.views:
            view_note = "views skipped: the catalog does not serve the view endpoints"
        recorder.stop()
    return {"counts": {"namespaces": len(tree.namespaces), "tables": len(tree.tables),
                       "views": len(tree.views) if with_views else 0},
            "views_note": view_note, **recorder.summary()}


async def create_flat(target: dict[str, Any], namespace: list[str], tables: list[str], shape: dict[str, int],
                      *, concurrency: int = 20) -> dict[str, Any]:
    """One namespace holding ``tables`` of the tree's shape (columns, properties): the peers'
    population for loadTable, whatever namespace nesting they support."""
    tree_shape = dataset.TreeShape(**shape)
    recorder = Recorder()
    async with RestCatalogClient(target, recorder, concurrency=concurrency) as client:
        recorder.start()
        await client.create_namespace(namespace, dataset.properties(tree_shape.properties), ok=(200, 409))
        await _bounded(concurrency, [client.create_table(namespace, dataset.table_body(name, tree_shape), ok=(200, 409))
                                     for name in tables])
        recorder.stop()
    summary = recorder.summary()
    if summary["errors_by_status"]:
        raise RuntimeError(f"creating the peer's tables failed: {summary['errors_by_status']} "
                           f"{summary['error_samples']}")
    return summary


# ---------------------------------------------------------------------------------------------
# ReadTreeDataset


def _read_calls(tree: dataset.Tree, client: RestCatalogClient, with_views: bool) -> list[Any]:
    """Every read of the tree as a zero-argument coroutine factory (Polaris' 9 read calls)."""
    calls: list[Any] = []
    for parent in tree.parents():
        calls.append(lambda parent=parent: client.list_namespaces(parent))
    for namespace in tree.namespaces:
        calls.append(lambda ns=namespace: client.namespace_exists(ns))
        calls.append(lambda ns=namespace: client.load_namespace(ns))
    for leaf in tree.leaves:
        calls.append(lambda ns=leaf: client.list_tables(ns))
        if with_views:
            calls.append(lambda ns=leaf: client.list_views(ns))
    for namespace, table in tree.tables:
        calls.append(lambda ns=namespace, t=table: client.table_exists(ns, t))
        calls.append(lambda ns=namespace, t=table: _load_and_verify(client, tree.shape, ns, t))
    if with_views:
        for namespace, view in tree.views:
            calls.append(lambda ns=namespace, v=view: client.view_exists(ns, v))
            calls.append(lambda ns=namespace, v=view: client.load_view(ns, v))
    return calls


async def _load_and_verify(client: RestCatalogClient, shape: dataset.TreeShape, namespace: list[str],
                           table: str) -> None:
    """loadTable, checking what Polaris checks: a table-uuid, a location and the initial properties."""
    status, payload = await client.load_table(namespace, table)
    if status != 200:
        return
    metadata = json.loads(payload).get("metadata", {})
    props = metadata.get("properties", {})
    expected = dataset.properties(shape.properties)
    if not metadata.get("table-uuid") or not metadata.get("location") or any(
            props.get(k) != v for k, v in expected.items()):
        client.recorder.record("load_table_verify", 0.0, "verify", False, f"{namespace}.{table}: {payload[:200]!r}")


async def read_tree(target: dict[str, Any], shape: dict[str, int], *, with_views: bool = True,
                    concurrency: int = 20, duration: float = 10.0) -> dict[str, Any]:
    """All read calls over the tree, shuffled and repeated, in a closed loop at ``concurrency``."""
    tree = _tree(shape)
    recorder = Recorder()
    async with RestCatalogClient(target, recorder, concurrency=concurrency) as client:
        calls = _read_calls(tree, client, with_views)
        order = list(range(len(calls)))
        random.Random(7).shuffle(order)
        cursor = 0

        async def step(worker: int, rng: random.Random) -> None:
            nonlocal cursor
            call = calls[order[cursor % len(order)]]
            cursor += 1
            await call()

        for call in calls[: min(len(calls), 50)]:  # warm connections and caches, unrecorded
            await call()
        recorder.reset()
        recorder.start()
        model = await closed_loop(concurrency, duration, step)
        recorder.stop()
    return {"load": model, "calls_per_pass": len(calls), **recorder.summary()}


# ---------------------------------------------------------------------------------------------
# loadTable throughput at fixed concurrency (ours, the web floor, peers)


async def load_table_throughput(target: dict[str, Any], tables: list[list[Any]], *, concurrency: int = 16,
                                duration: float = 10.0, snapshots: str | None = None,
                                warmup: float = 1.0) -> dict[str, Any]:
    """``tables`` is a list of ``[namespace, name]``; each request picks one at random."""
    recorder = Recorder()
    async with RestCatalogClient(target, recorder, concurrency=concurrency) as client:
        async def step(worker: int, rng: random.Random) -> None:
            namespace, table = tables[rng.randrange(len(tables))]
            await client.load_table(namespace, table, snapshots=snapshots)

        if warmup:
            await closed_loop(concurrency, warmup, step, seed=1)
        recorder.reset()
        recorder.start()
        model = await closed_loop(concurrency, duration, step)
        recorder.stop()
    return {"load": model, **recorder.summary()}


# ---------------------------------------------------------------------------------------------
# ReadUpdateTreeDataset (open model)


async def read_update(target: dict[str, Any], shape: dict[str, int], *, with_views: bool = True,
                      rate: float = 50.0, duration: float = 30.0, read_ratio: float = 0.5,
                      seed: int = 42) -> dict[str, Any]:
    """Random reads (the 9 read calls) and writes (namespace properties, table and view
    set-properties commits without ``requirements``, as Polaris sends them) at a fixed arrival rate."""
    tree = _tree(shape)
    recorder = Recorder()
    async with RestCatalogClient(target, recorder, concurrency=256) as client:
        counter = 0

        def read_call(rng: random.Random, at: float):
            choice = rng.randrange(9 if with_views else 6)
            ns = rng.choice(tree.namespaces)
            leaf = rng.choice(tree.leaves)
            tns, table = rng.choice(tree.tables)
            if choice == 0:
                return client.list_namespaces(rng.choice(tree.parents()), started=at)
            if choice == 1:
                return client.namespace_exists(ns, started=at)
            if choice == 2:
                return client.load_namespace(ns, started=at)
            if choice == 3:
                return client.list_tables(leaf, started=at)
            if choice == 4:
                return client.table_exists(tns, table, started=at)
            if choice == 5:
                return client.load_table(tns, table, started=at)
            vns, view = rng.choice(tree.views)
            if choice == 6:
                return client.list_views(leaf, started=at)
            if choice == 7:
                return client.view_exists(vns, view, started=at)
            return client.load_view(vns, view, started=at)

        def write_call(rng: random.Random, at: float):
            nonlocal counter
            counter += 1
            value = {f"bench.update.{counter % 10}": str(counter)}
            choice = rng.randrange(3 if with_views else 2)
            if choice == 0:
                return client.update_namespace_properties(rng.choice(tree.namespaces), value, started=at)
            if choice == 1:
                tns, table = rng.choice(tree.tables)
                return client.commit_table(tns, table, [{"action": "set-properties", "updates": value}],
                                           started=at)
            vns, view = rng.choice(tree.views)
            return client.commit_view(vns, view, [{"action": "set-properties", "updates": value}], started=at)

        async def step(rng: random.Random, at: float) -> None:
            call = read_call(rng, at) if rng.random() < read_ratio else write_call(rng, at)
            await call

        recorder.start()
        model = await open_loop(rate, duration, step, seed=seed)
        recorder.stop()
    return {"load": model, "read_ratio": read_ratio, **recorder.summary()}


# ---------------------------------------------------------------------------------------------
# CreateCommits (open model: table commits and view commits at fixed rates)


async def create_commits(target: dict[str, Any], shape: dict[str, int], *, with_views: bool = True,
                         table_rate: float = 10.0, view_rate: float = 5.0, duration: float = 30.0) -> dict[str, Any]:
    tree = _tree(shape)
    recorder = Recorder()
    async with RestCatalogClient(target, recorder, concurrency=128) as client:
        table_counter = view_counter = 0

        async def table_step(rng: random.Random, at: float) -> None:
            nonlocal table_counter
            table_counter += 1
            namespace, table = rng.choice(tree.tables)
            await client.commit_table(namespace, table, [
                {"action": "set-properties", "updates": {"bench.commit": str(table_counter)}}], started=at)

        async def view_step(rng: random.Random, at: float) -> None:
            nonlocal view_counter
            view_counter += 1
            namespace, view = rng.choice(tree.views)
            await client.commit_view(namespace, view, [
                {"action": "set-properties", "updates": {"bench.commit": str(view_counter)}}], started=at)

        recorder.start()
        loads = [open_loop(table_rate, duration, table_step, seed=1)]
        if with_views and tree.views:
            loads.append(open_loop(view_rate, duration, view_step, seed=2))
        models = await asyncio.gather(*loads)
        recorder.stop()
    return {"load": {"tables": models[0], "views": models[1] if len(models) > 1 else None}, **recorder.summary()}


# ---------------------------------------------------------------------------------------------
# WeightedWorkloadOnTreeDataset (contention) with lost-commit detection


def _skewed_index(rng: random.Random, count: int, mean: float, variance: float = 0.0278) -> int:
    while True:
        value = rng.gauss(mean, math.sqrt(variance))
        if 0 <= value < 1:
            return int(value * count)


async def contention(target: dict[str, Any], shape: dict[str, int], *, readers: int = 8, writers: int = 2,
                     duration: float = 30.0, seed: int = 42) -> dict[str, Any]:
    """8 readers (Normal(0.3, 0.0278) over the tables) and 2 writers (Normal(0.7, 0.0278)).

    Every writer commit sets its own property key; afterwards every key of an acknowledged
    (200) commit must be in the table's final metadata, or the commit was lost.
    """
    tree = _tree(shape)
    recorder = Recorder()
    acknowledged: dict[tuple[str, str], list[str]] = {}
    async with RestCatalogClient(target, recorder, concurrency=readers + writers) as client:
        deadline = time.perf_counter() + duration

        async def reader(index: int) -> None:
            rng = random.Random(seed * 100 + index)
            while time.perf_counter() < deadline:
                namespace, table = tree.tables[_skewed_index(rng, len(tree.tables), 0.3)]
                await client.load_table(namespace, table)

        async def writer(index: int) -> None:
            rng = random.Random(seed * 100 + 50 + index)
            sequence = 0
            while time.perf_counter() < deadline:
                namespace, table = tree.tables[_skewed_index(rng, len(tree.tables), 0.7)]
                sequence += 1
                key = f"bench.contention.w{index}.{sequence}"
                status, _ = await client.commit_table(
                    namespace, table, [{"action": "set-properties", "updates": {key: str(sequence)}}],
                    ok=(200,), op="commit_table")
                if status == 200:
                    acknowledged.setdefault((".".join(namespace), table), []).append(key)

        recorder.start()
        await asyncio.gather(*(reader(i) for i in range(readers)), *(writer(i) for i in range(writers)))
        recorder.stop()
        lost: list[str] = []
        verify_errors = 0
        for (ns_name, table), keys in acknowledged.items():
            status, payload, _ = await client.raw(
                "GET", client.url(f"/namespaces/{dataset_ns(ns_name.split('.'))}/tables/{table}"))
            if status != 200:
                verify_errors += 1
                lost.extend(keys)
                continue
            props = json.loads(payload)["metadata"].get("properties", {})
            lost.extend(key for key in keys if key not in props)
    summary = recorder.summary()
    server_errors = sum(count for status, count in summary["errors_by_status"].items()
                        if status.isdigit() and int(status) >= 500)
    return {"readers": readers, "writers": writers, "acknowledged_commits": sum(map(len, acknowledged.values())),
            "tables_written": len(acknowledged), "lost_commits": len(lost), "lost_examples": lost[:10],
            "verify_errors": verify_errors, "server_errors_5xx": server_errors,
            "conflicts_409": summary["errors_by_status"].get("409", 0), **summary}


# ---------------------------------------------------------------------------------------------
# append commits (ours and the SeaweedFS peer): throughput at fixed concurrency


async def _table_state(client: RestCatalogClient, namespace: list[str], table: str) -> dict[str, Any]:
    status, payload = await client.load_table(namespace, table, op="load_table_setup")
    if status != 200:
        raise RuntimeError(f"loadTable {namespace}.{table} -> {status}: {payload[:300]!r}")
    return json.loads(payload)["metadata"]


def _snapshot_ids(rng: random.Random) -> int:
    return rng.getrandbits(62) or 1


async def append_commits(target: dict[str, Any], *, namespace: list[str], concurrency: int = 4,
                         duration: float = 10.0, columns: int = 10, fresh_tables: bool = True) -> dict[str, Any]:
    """Each worker owns one table and appends snapshots (add-snapshot + set main) with
    ``assert-ref-snapshot-id``; a 409 reloads and retries."""
    recorder = Recorder()
    conflicts = 0
    async with RestCatalogClient(target, recorder, concurrency=concurrency) as client:
        await client.create_namespace(namespace, {}, ok=(200, 409))
        tables = [f"append_{i}" for i in range(concurrency)]
        states: list[dict[str, Any]] = []
        for name in tables:
            await client.create_table(namespace, {"name": name, "schema": dataset.schema(columns)}, ok=(200, 409))
            states.append(await _table_state(client, namespace, name))

        async def step(worker: int, rng: random.Random) -> None:
            nonlocal conflicts
            state = states[worker]
            parent = state.get("current-snapshot-id")
            if parent == -1:
                parent = None
            sequence = state.get("last-sequence-number", 0) + 1
            snap = dataset.snapshot(_snapshot_ids(rng), parent, sequence, state["location"], int(time.time() * 1000))
            status, payload = await client.commit_table(
                namespace, tables[worker], dataset.append_updates(snap),
                [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}], ok=(200,),
                op="append_commit")
            if status == 200:
                states[worker] = json.loads(payload)["metadata"]
            else:
                conflicts += status == 409
                states[worker] = await _table_state(client, namespace, tables[worker])

        recorder.start()
        model = await closed_loop(concurrency, duration, step)
        recorder.stop()
    return {"load": model, "retried_conflicts": conflicts, **recorder.summary()}


async def _grow_history(client: RestCatalogClient, namespace: list[str], table: str, state: dict[str, Any],
                        count: int, until: int, rng: random.Random, batch: int) -> tuple[dict[str, Any], int]:
    """Append snapshots with batched add-snapshot commits (placeholder manifest lists, which loadTable
    never reads) until the table has ``until``; returns the new metadata and the count."""
    while count < until:
        updates = []
        parent = state.get("current-snapshot-id")
        parent = None if parent in (None, -1) else parent
        sequence = state.get("last-sequence-number", 0)
        now = int(time.time() * 1000)
        for _ in range(min(batch, until - count)):
            sequence += 1
            snap = dataset.snapshot(_snapshot_ids(rng), parent, sequence, state["location"], now)
            updates.extend(dataset.append_updates(snap))
            parent = snap["snapshot-id"]
            count += 1
        status, payload = await client.commit_table(namespace, table, updates, op="build_history", ok=(200,))
        if status != 200:
            raise RuntimeError(f"building history failed at {count}: {status} {payload[:300]!r}")
        state = json.loads(payload)["metadata"]
    return state, count


async def append_commits_long_history(target: dict[str, Any], *, namespace: list[str], snapshots: int = 10_000,
                                     duration: float = 10.0, columns: int = 10, batch: int = 500,
                                     server_pid: int | None = None) -> dict[str, Any]:
    """One writer appending snapshots to a table that already has ``snapshots`` of them (built with
    batched add-snapshot commits first, unrecorded): what a commit costs once the metadata is large."""
    recorder = Recorder()
    async with RestCatalogClient(target, recorder, concurrency=2) as client:
        await client.create_namespace(namespace, {}, ok=(200, 409))
        table = f"history_{snapshots}"
        await client.create_table(namespace, {"name": table, "schema": dataset.schema(columns)}, ok=(200, 409))
        state = await _table_state(client, namespace, table)
        rng = random.Random(11)
        built = time.perf_counter()
        state, _ = await _grow_history(client, namespace, table, state, len(state.get("snapshots") or []),
                                       snapshots, rng, batch)
        build_s = time.perf_counter() - built
        conflicts = 0

        async def step(worker: int, step_rng: random.Random) -> None:
            nonlocal state, conflicts
            parent = state.get("current-snapshot-id")
            snap = dataset.snapshot(_snapshot_ids(step_rng), parent, state["last-sequence-number"] + 1,
                                    state["location"], int(time.time() * 1000))
            status, payload = await client.commit_table(
                namespace, table, dataset.append_updates(snap),
                [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}], ok=(200,),
                op="append_commit")
            if status == 200:
                state = json.loads(payload)["metadata"]
            else:
                conflicts += status == 409
                state = await _table_state(client, namespace, table)

        from bench.processes import cpu_seconds

        recorder.reset()
        cpu_before = cpu_seconds(server_pid) if server_pid else None
        recorder.start()
        model = await closed_loop(1, duration, step)
        recorder.stop()
        timed_cpu = cpu_seconds(server_pid) - cpu_before if server_pid else None
    # the server's CPU during the timed commits only (run_driver's figure would include the build)
    return {"load": model, "snapshots": snapshots, "build_history_s": round(build_s, 2),
            "retried_conflicts": conflicts, **recorder.summary(),
            **({"timed_server_cpu_s": round(timed_cpu, 3)} if timed_cpu is not None else {})}


# ---------------------------------------------------------------------------------------------
# cost curves


async def snapshot_curve(target: dict[str, Any], *, points: list[int], samples: int = 30,
                         batch: int = 500, columns: int = 10) -> dict[str, Any]:
    """Grow one table's history to each point in ``points`` and measure, at each point, sequential
    loadTable (``snapshots=all`` and ``refs``) and append-commit latency and the metadata size."""
    namespace = ["bench_curves"]
    table = "snapshot_history"
    rows = []
    recorder = Recorder()
    async with RestCatalogClient(target, recorder, concurrency=2) as client:
        await client.create_namespace(namespace, {}, ok=(200, 409))
        await client.create_table(namespace, {"name": table, "schema": dataset.schema(columns),
                                              "properties": dataset.properties(10)}, ok=(200, 409))
        state = await _table_state(client, namespace, table)
        rng = random.Random(3)
        count = len(state.get("snapshots", []))
        build_seconds = 0.0
        for point in points:
            began = time.perf_counter()
            state, count = await _grow_history(client, namespace, table, state, count, point, rng, batch)
            build_seconds += time.perf_counter() - began
            row: dict[str, Any] = {"snapshots": count}
            for mode in ("all", "refs"):
                latencies = []
                size = 0
                for _ in range(samples):
                    began = time.perf_counter()
                    status, payload = await client.load_table(namespace, table, snapshots=mode,
                                                              op=f"load_table_{mode}")
                    latencies.append(time.perf_counter() - began)
                    size = len(payload)
                row[f"load_{mode}"] = {**summarize_latencies(latencies), "bytes": size}
            latencies = []
            for _ in range(max(samples // 3, 5)):
                parent = state.get("current-snapshot-id")
                snap = dataset.snapshot(_snapshot_ids(rng), parent, state["last-sequence-number"] + 1,
                                        state["location"], int(time.time() * 1000))
                began = time.perf_counter()
                status, payload = await client.commit_table(
                    namespace, table, dataset.append_updates(snap),
                    [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": parent}],
                    op="append_commit", ok=(200,))
                latencies.append(time.perf_counter() - began)
                if status != 200:
                    raise RuntimeError(f"append commit at {count} snapshots: {status} {payload[:300]!r}")
                state = json.loads(payload)["metadata"]
                count += 1
            row["append_commit"] = summarize_latencies(latencies)
            row["metadata_bytes"] = row["load_all"]["bytes"]
            rows.append(row)
    summary = recorder.summary()
    return {"points": rows, "build_history_s": round(build_seconds, 2),
            "errors_by_status": summary["errors_by_status"], "error_samples": summary["error_samples"]}


async def list_curve(target: dict[str, Any], *, points: list[int], page_size: int = 100, samples: int = 30,
                     create_concurrency: int = 16, time_budget: float | None = None,
                     db: dict[str, Any] | None = None) -> dict[str, Any]:
    """Grow one namespace to each table count in ``points``; at each, time the first, the middle and
    the last page (their tokens found by walking every page once) of listTables at ``page_size``:
    with keyset pagination on the right index all three cost the same at any size.

    Tables are created through the API, concurrently. Once ``time_budget`` seconds of creating
    are spent, the rest of each point is filled, if ``db`` is given, by cloning the row of an
    API-created table in the server's ``tabular`` table (new id, name and location); listing
    reads only those rows. Each point records how many tables came from which path.
    """
    namespace = list(dataset.LIST_CURVE_NAMESPACE)
    rows = []
    recorder = Recorder()
    create_seconds_total = 0.0
    stopped_reason = None
    via = {"api": 0, "sql_clone": 0}
    async with RestCatalogClient(target, recorder, concurrency=create_concurrency) as client:
        await client.create_namespace(namespace, {}, ok=(200, 409))
        created = 0
        minimal = dataset.schema(1)
        for point in points:
            began = time.perf_counter()
            while created < point:
                budget_left = time_budget is None or create_seconds_total + time.perf_counter() - began < time_budget
                if not budget_left:
                    if db is None:
                        stopped_reason = f"time budget {time_budget:.0f}s spent at {created} tables"
                        break
                    cloned = await _clone_tables(db, namespace, created, point)
                    via["sql_clone"] += cloned
                    created += cloned
                    break
                chunk = min(point - created, 500)
                results = await _bounded(create_concurrency, [
                    client.create_table(namespace, {"name": f"t_{created + i:07d}", "schema": minimal}, ok=(200, 409))
                    for i in range(chunk)])
                failures = [status for status, _ in results if status not in (200, 409)]
                if failures:
                    raise RuntimeError(f"creating tables failed: {failures[:5]}")
                created += chunk
                via["api"] += chunk
            create_seconds = time.perf_counter() - began
            create_seconds_total += create_seconds
            if stopped_reason:
                break
            if db is not None and db["kind"] == "postgres":
                # fresh planner statistics, as autovacuum keeps them on a production server (this
                # machine's PostgreSQL runs with autovacuum off; the clones also bypass the server)
                async with _RawDatabase(db, 1) as raw:
                    await raw.fetch("ANALYZE tabular")
            # walk every page once to find the middle and last pages' tokens (and count what is listed)
            token: str | None = ""
            last_token = ""
            tokens: list[str] = [""]
            listed = pages = 0
            while token is not None:
                status, payload = await client.list_tables(namespace, page_size=page_size, page_token=token,
                                                           op="list_tables_walk")
                if status != 200:
                    raise RuntimeError(f"listTables -> {status}: {payload[:300]!r}")
                body = json.loads(payload)
                listed += len(body.get("identifiers", []))
                pages += 1
                next_token = body.get("next-page-token")
                if next_token:
                    last_token = next_token
                    tokens.append(next_token)
                token = next_token or None
            row: dict[str, Any] = {"tables": created, "listed": listed, "pages": pages,
                                   "create_s": round(create_seconds, 2), "created_via": dict(via),
                                   "create_rate": round((created - (rows[-1]["tables"] if rows else 0))
                                                        / max(create_seconds, 1e-9), 1)}
            middle_token = tokens[len(tokens) // 2]
            for label, token_value in (("first_page", ""), ("middle_page", middle_token), ("last_page", last_token)):
                latencies = []
                for _ in range(samples):
                    start = time.perf_counter()
                    await client.list_tables(namespace, page_size=page_size, page_token=token_value,
                                             op=f"list_tables_{label}")
                    latencies.append(time.perf_counter() - start)
                row[label] = summarize_latencies(latencies)
            rows.append(row)
    summary = recorder.summary()
    return {"points": rows, "page_size": page_size, "stopped": stopped_reason, "created_via": via,
            "api_create_rate": round(via["api"] / max(create_seconds_total, 1e-9), 1) if via["api"] else None,
            "errors_by_status": summary["errors_by_status"], "error_samples": summary["error_samples"]}


async def _clone_tables(db: dict[str, Any], namespace: list[str], start: int, stop: int) -> int:
    """Rows ``t_{start}`` .. ``t_{stop-1}`` in ``namespace``, cloned from the row of ``t_0000000``."""
    from lakekeeper_host.store.db import new_id

    async with _RawDatabase(db, 1) as raw:
        columns = [row[0] for row in await raw.fetch(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'tabular' "
            "ORDER BY ordinal_position")] if raw.postgres else [
            row[1] for row in await raw.fetch("PRAGMA table_info(tabular)")]
        template = await raw.fetch(
            f"SELECT {', '.join(columns)} FROM tabular WHERE name_key = ? AND deleted_at IS NULL "
            "AND namespace_id IN (SELECT id FROM namespace WHERE name_key = ?)",
            "t_0000000", namespace[-1].casefold())
        if not template:
            raise RuntimeError("no API-created table t_0000000 to clone")
        base = dict(zip(columns, template[0], strict=True))
        rows = []
        for index in range(start, stop):
            name = f"t_{index:07d}"
            row = dict(base, id=new_id(), name=name, name_key=name,
                       location=f"{base['location'].rstrip('/')}-clone-{index}")
            rows.append(tuple(row[column] for column in columns))
        placeholders = ", ".join("?" for _ in columns)
        for offset in range(0, len(rows), 5000):
            await raw.execute_many(f"INSERT INTO tabular ({', '.join(columns)}) VALUES ({placeholders})",
                                   rows[offset:offset + 5000])
    return stop - start


# ---------------------------------------------------------------------------------------------
# floors


class _RawDatabase:
    """The thinnest async access to the server's database: an asyncpg pool, or a few aiosqlite
    connections used round-robin (sqlite3 releases the GIL while a query runs)."""

    def __init__(self, db: dict[str, Any], size: int):
        self.db = db
        self.size = size
        self.postgres = db["kind"] == "postgres"
        self._pool: Any = None
        self._connections: list[Any] = []
        self._next = 0

    def sql(self, text: str) -> str:
        """``text`` uses ``?`` placeholders; PostgreSQL wants ``$1, $2, ...``."""
        if not self.postgres:
            return text
        parts = text.split("?")
        return "".join(part + (f"${i + 1}" if i < len(parts) - 1 else "") for i, part in enumerate(parts))

    async def __aenter__(self) -> _RawDatabase:
        if self.postgres:
            import asyncpg

            self._pool = await asyncpg.create_pool(self.db["url"], min_size=self.size, max_size=self.size)
        else:
            import aiosqlite

            for _ in range(self.size):
                connection = await aiosqlite.connect(self.db["path"])
                await connection.execute("PRAGMA busy_timeout = 5000")
                self._connections.append(connection)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._pool is not None:
            await self._pool.close()
        for connection in self._connections:
            await connection.close()

    async def fetch(self, text: str, *args: Any) -> list[tuple]:
        if self.postgres:
            async with self._pool.acquire() as connection:
                return [tuple(row) for row in await connection.fetch(self.sql(text), *args)]
        connection = self._connections[self._next % len(self._connections)]
        self._next += 1
        async with connection.execute(text, args) as cursor:
            return list(await cursor.fetchall())

    async def execute_many(self, text: str, rows: list[tuple]) -> None:
        if self.postgres:
            async with self._pool.acquire() as connection:
                await connection.executemany(self.sql(text), rows)
            return
        connection = self._connections[0]
        await connection.executemany(text, rows)
        await connection.commit()

    async def execute(self, text: str) -> None:
        if self.postgres:
            async with self._pool.acquire() as connection:
                await connection.execute(text)
            return
        await self._connections[0].execute(text)
        await self._connections[0].commit()


async def db_floor(db: dict[str, Any], *, body: str, concurrency: int = 16, duration: float = 10.0,
                   rows: int = 40) -> dict[str, Any]:
    """The storage limit: the row read behind loadTable, raw driver, same database, same concurrency.

    Reads the server's own ``tabular`` rows by (namespace id, name key), the lookup loadTable
    makes, when the tree's tables are there; otherwise rows of a bench table holding the same
    bytes as the loadTable response. PostgreSQL: an asyncpg pool of 10 (the server's read pool
    size); SQLite: 4 aiosqlite connections on the server's database file.
    """
    recorder = Recorder()
    async with _RawDatabase(db, 10 if db["kind"] == "postgres" else 4) as raw:
        try:
            keys = await raw.fetch("SELECT namespace_id, name_key FROM tabular WHERE typ = 'table' "
                                   "AND deleted_at IS NULL AND metadata IS NOT NULL ORDER BY created_at LIMIT ?", rows)
        except Exception:
            keys = []
        if keys:
            source = "tabular (the server's table rows)"
            query = "SELECT * FROM tabular WHERE namespace_id = ? AND name_key = ? AND deleted_at IS NULL"
        else:
            source = "bench_floor (rows holding the loadTable bytes)"
            await raw.execute("CREATE TABLE IF NOT EXISTS bench_floor (id TEXT PRIMARY KEY, metadata TEXT)")
            keys = [(f"bench-floor-{i}",) for i in range(rows)]
            await raw.execute_many("INSERT INTO bench_floor VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
                                   [(key[0], body) for key in keys])
            query = "SELECT metadata FROM bench_floor WHERE id = ?"

        async def step(worker: int, rng: random.Random) -> None:
            began = time.perf_counter()
            found = await raw.fetch(query, *keys[rng.randrange(len(keys))])
            recorder.record("db_read", time.perf_counter() - began, 200, bool(found))

        await closed_loop(concurrency, 1.0, step, seed=1)
        recorder.reset()
        recorder.start()
        model = await closed_loop(concurrency, duration, step)
        recorder.stop()
        if source.startswith("bench_floor"):
            await raw.execute("DROP TABLE bench_floor")
    return {"load": model, "source": source, "body_bytes": len(body), **recorder.summary()}


# ---------------------------------------------------------------------------------------------
# PyIceberg SqlCatalog in-process: the same append commits without a server


async def sqlcatalog_commits(uri: str, warehouse: str, *, concurrency: int = 4, duration: float = 10.0,
                             columns: int = 10) -> dict[str, Any]:
    """PyIceberg ``SqlCatalog`` (SQLAlchemy) on the same database and storage, ``concurrency``
    threads, each appending snapshots to its own table through ``catalog.commit_table``."""
    return await asyncio.to_thread(_sqlcatalog_commits_sync, uri, warehouse, concurrency, duration, columns)


def _sqlcatalog_commits_sync(uri: str, warehouse: str, concurrency: int, duration: float,
                             columns: int) -> dict[str, Any]:
    import threading

    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.table.refs import SnapshotRefType
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary
    from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate

    catalog = SqlCatalog("bench", uri=uri, warehouse=warehouse)
    namespace = f"bench_sqlcatalog_c{concurrency}"
    if (namespace,) not in catalog.list_namespaces():
        catalog.create_namespace(namespace)
    schema = Schema.model_validate(dataset.schema(columns))
    tables = []
    for i in range(concurrency):
        identifier = f"{namespace}.append_{i}"
        if catalog.table_exists(identifier):
            catalog.drop_table(identifier)  # not purge: the manifest lists are placeholders
        tables.append(catalog.create_table(identifier, schema))
    recorder = Recorder()
    deadline = time.perf_counter() + duration
    conflicts = 0
    lock = threading.Lock()

    def worker(index: int) -> None:
        nonlocal conflicts
        rng = random.Random(index)
        table = tables[index]
        while time.perf_counter() < deadline:
            metadata = table.metadata
            parent = metadata.current_snapshot_id
            snap = Snapshot(
                snapshot_id=_snapshot_ids(rng), parent_snapshot_id=parent,
                sequence_number=metadata.last_sequence_number + 1, timestamp_ms=int(time.time() * 1000),
                manifest_list=f"{metadata.location}/metadata/snap-bench.avro",
                summary=Summary(operation=Operation.APPEND, **{"added-data-files": "1", "added-records": "10"}),
                schema_id=0)
            began = time.perf_counter()
            try:
                response = catalog.commit_table(
                    table,
                    (AssertRefSnapshotId(ref="main", snapshot_id=parent),),
                    (AddSnapshotUpdate(snapshot=snap),
                     SetSnapshotRefUpdate(ref_name="main", type=SnapshotRefType.BRANCH,
                                          snapshot_id=snap.snapshot_id)))
            except Exception as exc:
                recorder.record("append_commit", time.perf_counter() - began, type(exc).__name__, False, str(exc))
                with lock:
                    conflicts += 1
                table = catalog.load_table(table.name())
                continue
            recorder.record("append_commit", time.perf_counter() - began, 200, True)
            table.metadata = response.metadata
            table.metadata_location = response.metadata_location

    recorder.start()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    recorder.stop()
    catalog.engine.dispose()
    return {"load": {"model": "closed", "concurrency": concurrency, "threads": True},
            "failed_commits": conflicts, **recorder.summary()}


async def sqlcatalog_commits_long_history(uri: str, warehouse: str, *, snapshots: int = 10_000,
                                         duration: float = 10.0, columns: int = 10,
                                         batch: int = 500) -> dict[str, Any]:
    """PyIceberg ``SqlCatalog`` in-process: the same one-writer append commits on a table that already
    has ``snapshots`` snapshots (built with batched commits first, unrecorded)."""
    return await asyncio.to_thread(_sqlcatalog_long_history_sync, uri, warehouse, snapshots, duration, columns, batch)


def _sqlcatalog_long_history_sync(uri: str, warehouse: str, snapshots: int, duration: float, columns: int,
                                  batch: int) -> dict[str, Any]:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.table.refs import SnapshotRefType
    from pyiceberg.table.snapshots import Operation, Snapshot, Summary
    from pyiceberg.table.update import AddSnapshotUpdate, AssertRefSnapshotId, SetSnapshotRefUpdate

    catalog = SqlCatalog("bench", uri=uri, warehouse=warehouse)
    namespace = "bench_sqlcatalog_history"
    if (namespace,) not in catalog.list_namespaces():
        catalog.create_namespace(namespace)
    identifier = f"{namespace}.history_{snapshots}"
    if catalog.table_exists(identifier):
        catalog.drop_table(identifier)
    table = catalog.create_table(identifier, Schema.model_validate(dataset.schema(columns)))
    rng = random.Random(11)

    def snapshot_after(metadata: Any, parent: int | None, sequence: int) -> Snapshot:
        return Snapshot(
            snapshot_id=_snapshot_ids(rng), parent_snapshot_id=parent, sequence_number=sequence,
            timestamp_ms=int(time.time() * 1000), manifest_list=f"{metadata.location}/metadata/snap-bench.avro",
            summary=Summary(operation=Operation.APPEND, **{"added-data-files": "1", "added-records": "10"}),
            schema_id=0)

    built = time.perf_counter()
    count = 0
    while count < snapshots:
        metadata = table.metadata
        parent, sequence, updates = metadata.current_snapshot_id, metadata.last_sequence_number, []
        for _ in range(min(batch, snapshots - count)):
            sequence += 1
            snap = snapshot_after(metadata, parent, sequence)
            updates += [AddSnapshotUpdate(snapshot=snap), SetSnapshotRefUpdate(
                ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=snap.snapshot_id)]
            parent = snap.snapshot_id
            count += 1
        response = catalog.commit_table(table, (), tuple(updates))
        table.metadata, table.metadata_location = response.metadata, response.metadata_location
    build_s = time.perf_counter() - built
    recorder = Recorder()
    failed = 0
    recorder.start()
    deadline = time.perf_counter() + duration
    while time.perf_counter() < deadline:
        metadata = table.metadata
        parent = metadata.current_snapshot_id
        snap = snapshot_after(metadata, parent, metadata.last_sequence_number + 1)
        began = time.perf_counter()
        try:
            response = catalog.commit_table(
                table, (AssertRefSnapshotId(ref="main", snapshot_id=parent),),
                (AddSnapshotUpdate(snapshot=snap),
                 SetSnapshotRefUpdate(ref_name="main", type=SnapshotRefType.BRANCH, snapshot_id=snap.snapshot_id)))
        except Exception as exc:
            recorder.record("append_commit", time.perf_counter() - began, type(exc).__name__, False, str(exc))
            failed += 1
            table = catalog.load_table(identifier)
            continue
        recorder.record("append_commit", time.perf_counter() - began, 200, True)
        table.metadata, table.metadata_location = response.metadata, response.metadata_location
    recorder.stop()
    catalog.engine.dispose()
    return {"load": {"model": "closed", "concurrency": 1, "threads": True}, "snapshots": snapshots,
            "build_history_s": round(build_s, 2), "failed_commits": failed, **recorder.summary()}


async def ui_pages(target: dict[str, Any], *, namespace: list[str], samples: int = 10,
                   page_size: int = 100) -> dict[str, Any]:
    """The web console's page times (server-rendered HTML, ``/ui``) on the namespace the list curve
    grew: server page, warehouse page (namespace tree), the namespace's first, middle and last page
    of tables (the console follows the API's page tokens) and one table's detail page. Sequential
    requests, one sample each after a warm-up; the tokens come from walking listTables once."""
    import httpx

    server_url = target["catalog_url"].removesuffix("/catalog")
    recorder = Recorder()
    ns_param = "\x1f".join(namespace)
    async with RestCatalogClient(target, recorder, concurrency=1) as client, \
            httpx.AsyncClient(base_url=server_url, timeout=120) as http:
        warehouses = (await http.get("/management/v1/warehouse")).json()["warehouses"]
        warehouse_id = next(w["warehouse-id"] for w in warehouses if w["name"] == target["warehouse"])
        tokens, token, listed, first_table = [""], "", 0, None
        while token is not None:
            status, payload = await client.list_tables(namespace, page_size=page_size, page_token=token,
                                                       op="list_tables_walk")
            if status != 200:
                raise RuntimeError(f"listTables -> {status}: {payload[:300]!r}")
            body = json.loads(payload)
            identifiers = body.get("identifiers", [])
            listed += len(identifiers)
            first_table = first_table or (identifiers[0]["name"] if identifiers else None)
            token = body.get("next-page-token") or None
            if token:
                tokens.append(token)
        namespace_url = f"/ui/warehouses/{warehouse_id}/namespace"
        pages: dict[str, tuple[str, dict[str, str]]] = {
            "server": ("/ui/", {}),
            "warehouse": (f"/ui/warehouses/{warehouse_id}", {}),
            "namespace_first_page": (namespace_url, {"ns": ns_param, "page_size": str(page_size)}),
            "namespace_middle_page": (namespace_url, {"ns": ns_param, "page_size": str(page_size),
                                                      "tables_token": tokens[len(tokens) // 2]}),
            "namespace_last_page": (namespace_url, {"ns": ns_param, "page_size": str(page_size),
                                                    "tables_token": tokens[-1]}),
        }
        if first_table:
            pages["table"] = (f"/ui/warehouses/{warehouse_id}/table", {"ns": ns_param, "name": first_table})
        rows: dict[str, Any] = {}
        for label, (path, params) in pages.items():
            latencies, sizes = [], []
            for attempt in range(samples + 1):
                start = time.perf_counter()
                response = await http.get(path, params=params)
                elapsed = time.perf_counter() - start
                if response.status_code != 200:
                    raise RuntimeError(f"{label}: GET {path} -> {response.status_code}: {response.text[:300]!r}")
                if attempt:  # the first request warms caches and templates
                    latencies.append(elapsed)
                    sizes.append(len(response.content))
            rows[label] = {**summarize_latencies(latencies), "html_kb": round(max(sizes) / 1024, 1)}
    return {"tables": listed, "pages_of_tables": len(tokens), "page_size": page_size, "samples": samples,
            "pages": rows}


# ---------------------------------------------------------------------------------------------
# authorization: a filtered list page (bench/authz.py)


async def list_page_latency(target: dict[str, Any], *, namespace: list[str], page_size: int = 100,
                            samples: int = 20) -> dict[str, Any]:
    """Sequential first pages of listTables: the first request alone (cold caches) and the rest;
    ``listed`` is how many identifiers the page held."""
    latencies: list[float] = []
    listed = None
    async with RestCatalogClient(target, concurrency=1) as client:
        for _ in range(samples + 1):
            start = time.perf_counter()
            status, payload = await client.list_tables(namespace, page_size=page_size, op="list_tables_first_page")
            latencies.append(time.perf_counter() - start)
            if status != 200:
                raise RuntimeError(f"listTables -> {status}: {payload[:300]!r}")
            listed = len(json.loads(payload).get("identifiers", []))
    return {"first_request_ms": round(latencies[0] * 1000, 3), "listed": listed, "page_size": page_size,
            **summarize_latencies(latencies[1:])}
