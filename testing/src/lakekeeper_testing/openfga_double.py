"""A TEST DOUBLE of the OpenFGA HTTP API, for tests and for trying things out -- NOT FOR PRODUCTION.

It keeps everything in memory (a restart forgets every store, model and tuple), checks no
credentials and scales to what a test needs. ``lakekeeper-dev openfga --port N`` serves it for a
development setup (docs/authorization.md); production runs OpenFGA itself.

Why a double: no OpenFGA server can run on this machine (no binary on PyPI, npm or Debian, no Go
toolchain to build one; ../shared/reference/infrastructure.md §4). The official ``fga`` CLI embeds
the real engine, but only for offline ``fga model test`` runs, not as a server. So the plugin talks
through ``openfga-sdk`` to this double, and ``test_double_conformance.py`` proves the double answers
exactly as the real engine does: it feeds the same model, tuples and hundreds of generated check and
list-objects questions to ``fga model test`` and asserts the double's answers pass there.

What it implements: the endpoints ``openfga-sdk`` calls for stores, authorization models, write,
read, check, batch-check and list-objects, with OpenFGA's JSON shapes and validation (tuples must
fit the model's type restrictions; unknown relations are a 400). Checks evaluate the model's JSON
rewrites: direct relations (``this``) with wildcards and usersets, computed usersets,
tuple-to-userset, union, intersection and difference; a userset asked about itself is a member
(as in OpenFGA; the conformance test found this one). Conditions, contextual tuples beyond plain
keys, and consistency options are not modelled (the plugin uses none of them).
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime

from aiohttp import web

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_ulid() -> str:
    """OpenFGA ids (stores, models) are ULIDs; openfga-sdk rejects a model id that is not one."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


class FgaError(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _split_user(user: str) -> tuple[str, str, str | None]:
    """``type:id`` or ``type:id#relation`` or ``type:*`` -> (type, id, relation)."""
    obj, _, relation = user.partition("#")
    kind, sep, ident = obj.partition(":")
    if not sep or not kind or not ident:
        raise FgaError(400, "validation_error", f"invalid user {user!r}")
    return kind, ident, relation or None


class Engine:
    """Relationship tuples and check evaluation against one authorization model (its JSON form)."""

    def __init__(self, model: dict) -> None:
        self.types = {td["type"]: td for td in model["type_definitions"]}

    def relation_exists(self, kind: str, relation: str) -> bool:
        return relation in (self.types.get(kind, {}).get("relations") or {})

    def validate_tuple(self, user: str, relation: str, obj: str) -> None:
        kind, _, _ = _split_user(obj)
        if kind not in self.types:
            raise FgaError(400, "validation_error", f"type '{kind}' not found")
        if not self.relation_exists(kind, relation):
            raise FgaError(400, "validation_error", f"relation '{kind}#{relation}' not found")
        user_kind, user_id, user_relation = _split_user(user)
        allowed = self.types[kind]["metadata"]["relations"][relation].get("directly_related_user_types") or []
        for restriction in allowed:
            if restriction["type"] != user_kind:
                continue
            if user_id == "*":
                if "wildcard" in restriction and user_relation is None:
                    return
            elif restriction.get("relation") == user_relation and "wildcard" not in restriction:
                return
        raise FgaError(400, "validation_error",
                       f"type '{user}' is not an allowed type restriction for '{kind}#{relation}'")

    def check(self, tuples: TupleIndex, user: str, relation: str, obj: str) -> bool:
        kind, _, _ = _split_user(obj)
        if not self.relation_exists(kind, relation):
            raise FgaError(400, "validation_error", f"relation '{kind}#{relation}' not found")
        return _Evaluation(self, tuples).check(user, relation, obj)

    def list_objects(self, tuples: TupleIndex, user: str, relation: str, kind: str) -> list[str]:
        if not self.relation_exists(kind, relation):
            raise FgaError(400, "validation_error", f"relation '{kind}#{relation}' not found")
        evaluation = _Evaluation(self, tuples)
        candidates = tuples.objects_of_type(kind)
        if "#" in user and user.startswith(kind + ":"):
            candidates.add(user.partition("#")[0])  # the userset's own object, tuples or not
        return sorted(obj for obj in candidates if evaluation.check(user, relation, obj))


class TupleIndex:
    """The store's tuples: (object, relation) -> users, plus a set for reads and duplicates."""

    def __init__(self) -> None:
        self.keys: dict[tuple[str, str, str], str] = {}  # (user, relation, object) -> timestamp
        self.users_of: dict[tuple[str, str], set[str]] = defaultdict(set)

    def add(self, user: str, relation: str, obj: str) -> None:
        self.keys[(user, relation, obj)] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        self.users_of[(obj, relation)].add(user)

    def remove(self, user: str, relation: str, obj: str) -> None:
        del self.keys[(user, relation, obj)]
        self.users_of[(obj, relation)].discard(user)

    def objects_of_type(self, kind: str) -> set[str]:
        return {obj for (_, _, obj) in self.keys if obj.startswith(kind + ":")}


class _Evaluation:
    """One request's evaluation: memoised, and a relation met again on its own path counts as False
    (OpenFGA resolves such cycles to "not allowed" too)."""

    def __init__(self, engine: Engine, tuples: TupleIndex) -> None:
        self.engine, self.tuples = engine, tuples
        self.memo: dict[tuple[str, str, str], bool] = {}
        self.in_progress: set[tuple[str, str, str]] = set()

    def check(self, user: str, relation: str, obj: str) -> bool:
        key = (user, relation, obj)
        if key in self.memo:
            return self.memo[key]
        if key in self.in_progress:
            return False
        if user == f"{obj}#{relation}":
            return True  # a userset is a member of itself (role:r#assignee is an assignee of role:r)
        kind = obj.partition(":")[0]
        rewrite = self.engine.types[kind]["relations"][relation]
        self.in_progress.add(key)
        try:
            result = self.rewrite(rewrite, user, relation, obj)
        finally:
            self.in_progress.discard(key)
        self.memo[key] = result
        return result

    def rewrite(self, node: dict, user: str, relation: str, obj: str) -> bool:
        if "this" in node:
            return self.direct(user, relation, obj)
        if "computedUserset" in node:
            return self.check(user, node["computedUserset"]["relation"], obj)
        if "tupleToUserset" in node:
            tupleset = node["tupleToUserset"]["tupleset"]["relation"]
            computed = node["tupleToUserset"]["computedUserset"]["relation"]
            for linked in sorted(self.tuples.users_of.get((obj, tupleset), ())):
                linked_kind = linked.partition(":")[0]
                if "#" not in linked and self.engine.relation_exists(linked_kind, computed):
                    if self.check(user, computed, linked):
                        return True
            return False
        if "union" in node:
            return any(self.rewrite(child, user, relation, obj) for child in node["union"]["child"])
        if "intersection" in node:
            return all(self.rewrite(child, user, relation, obj) for child in node["intersection"]["child"])
        if "difference" in node:
            difference = node["difference"]
            return self.rewrite(difference["base"], user, relation, obj) and not self.rewrite(
                difference["subtract"], user, relation, obj
            )
        raise FgaError(400, "validation_error", f"unsupported rewrite {sorted(node)}")

    def direct(self, user: str, relation: str, obj: str) -> bool:
        user_kind, user_id, user_relation = _split_user(user)
        for granted in sorted(self.tuples.users_of.get((obj, relation), ())):
            if granted == user:
                return True
            granted_kind, granted_id, granted_relation = _split_user(granted)
            if granted_id == "*" and granted_kind == user_kind and user_relation is None:
                return True
            if granted_relation is not None and self.check(user, granted_relation, f"{granted_kind}:{granted_id}"):
                return True
        return False


class _Store:
    def __init__(self, name: str) -> None:
        self.id = new_ulid()
        self.name = name
        self.created_at = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        self.models: list[dict] = []  # newest first, as OpenFGA lists them
        self.tuples = TupleIndex()

    def as_json(self) -> dict:
        return {"id": self.id, "name": self.name, "created_at": self.created_at, "updated_at": self.created_at}

    def engine(self, model_id: str | None) -> Engine:
        if not self.models:
            raise FgaError(400, "latest_authorization_model_not_found", "no authorization model in the store")
        if not model_id:
            return Engine(self.models[0])
        for model in self.models:
            if model["id"] == model_id:
                return Engine(model)
        raise FgaError(400, "authorization_model_not_found", f"authorization model {model_id} not found")


class OpenFgaDouble:
    """The double as an HTTP server on a free port, in its own thread (``start()`` / ``stop()``; a
    restarted double listens on its first port again and keeps its stores: an OpenFGA outage).

    ``requests`` counts the calls per endpoint so tests can see what reached "OpenFGA" (the cache).
    ``fail_writes = True`` makes every tuple write answer 503, as an OpenFGA that is down for writes
    (checks and reads still answer): lifecycle calls after a database commit then fail.

    ListObjects stops as OpenFGA's does: at ``list_objects_max_results`` objects
    (``OPENFGA_LIST_OBJECTS_MAX_RESULTS``, default 1000), and at ``list_objects_deadline``
    (``OPENFGA_LIST_OBJECTS_DEADLINE``, default 3 s), answering with what it found so far and no
    sign that it stopped. The double finds objects instantly; ``list_objects_seconds_per_object``
    makes it as slow as a large store, so a test can make it reach the deadline.
    """

    def __init__(self) -> None:
        self.stores: dict[str, _Store] = {}
        self.list_objects_max_results = 1000
        self.list_objects_deadline = 3.0
        self.list_objects_seconds_per_object = 0.0
        self.requests: dict[str, int] = defaultdict(int)
        self.authorization_headers: list[str | None] = []
        self.fail_writes = False
        self.url = ""
        self._port: int | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle

    def start(self, port: int = 0, host: str = "127.0.0.1") -> OpenFgaDouble:
        """Serve on ``host:port`` in a thread of its own. Port 0: the port of an earlier start (a
        stopped double comes back where its clients expect it), else a free one."""
        port = port or self._port or 0
        if port == 0:
            sock = socket.socket()
            sock.bind((host, 0))
            port = sock.getsockname()[1]
            sock.close()
        self._port = port
        ready = threading.Event()
        failed: list[BaseException] = []

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._runner = web.AppRunner(self._app())
            self._loop.run_until_complete(self._runner.setup())
            try:
                self._loop.run_until_complete(web.TCPSite(self._runner, host, port).start())
            except OSError as exc:  # the port is taken
                failed.append(exc)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            self._loop.close()

        self._thread = threading.Thread(target=run, name="openfga-double", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("the OpenFGA double did not start")
        if failed:
            raise failed[0]
        self.url = f"http://{host}:{port}"
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def store_named(self, name: str) -> _Store | None:
        return next((s for s in self.stores.values() if s.name == name), None)

    # ---------------------------------------------------------------- HTTP

    def _app(self) -> web.Application:
        app = web.Application(middlewares=[self._errors])
        routes = [
            web.get("/stores", self._list_stores),
            web.post("/stores", self._create_store),
            web.get("/stores/{store}", self._get_store),
            web.get("/stores/{store}/authorization-models", self._list_models),
            web.post("/stores/{store}/authorization-models", self._write_model),
            web.get("/stores/{store}/authorization-models/{model}", self._get_model),
            web.post("/stores/{store}/write", self._write),
            web.post("/stores/{store}/read", self._read),
            web.post("/stores/{store}/check", self._check),
            web.post("/stores/{store}/batch-check", self._batch_check),
            web.post("/stores/{store}/list-objects", self._list_objects),
        ]
        app.add_routes(routes)
        return app

    @web.middleware
    async def _errors(self, request: web.Request, handler):
        route = request.match_info.route.resource
        self.requests[route.canonical if route is not None else request.path] += 1
        self.authorization_headers.append(request.headers.get("Authorization"))
        try:
            return await handler(request)
        except FgaError as exc:
            return web.json_response({"code": exc.code, "message": exc.message}, status=exc.status)

    def _store(self, request: web.Request) -> _Store:
        store = self.stores.get(request.match_info["store"])
        if store is None:
            raise FgaError(404, "store_id_not_found", f"store {request.match_info['store']} not found")
        return store

    async def _list_stores(self, request: web.Request) -> web.Response:
        name = request.query.get("name")
        stores = [s.as_json() for s in self.stores.values() if not name or s.name == name]
        return web.json_response({"stores": stores, "continuation_token": ""})

    async def _create_store(self, request: web.Request) -> web.Response:
        body = await request.json()
        if not body.get("name"):
            raise FgaError(400, "validation_error", "store name is required")
        store = _Store(body["name"])
        self.stores[store.id] = store
        return web.json_response(store.as_json(), status=201)

    async def _get_store(self, request: web.Request) -> web.Response:
        return web.json_response(self._store(request).as_json())

    async def _list_models(self, request: web.Request) -> web.Response:
        store = self._store(request)
        page_size = int(request.query.get("page_size") or 50)
        start = int(request.query.get("continuation_token") or 0)
        page = store.models[start:start + page_size]
        token = str(start + page_size) if start + page_size < len(store.models) else ""
        return web.json_response({"authorization_models": page, "continuation_token": token})

    async def _write_model(self, request: web.Request) -> web.Response:
        store = self._store(request)
        body = await request.json()
        model = {
            "id": new_ulid(),
            "schema_version": body["schema_version"],
            "type_definitions": body["type_definitions"],
            "conditions": body.get("conditions") or {},
        }
        Engine(model)  # structurally usable
        store.models.insert(0, model)
        return web.json_response({"authorization_model_id": model["id"]}, status=201)

    async def _get_model(self, request: web.Request) -> web.Response:
        store = self._store(request)
        for model in store.models:
            if model["id"] == request.match_info["model"]:
                return web.json_response({"authorization_model": model})
        raise FgaError(404, "authorization_model_not_found", "authorization model not found")

    async def _write(self, request: web.Request) -> web.Response:
        if self.fail_writes:
            raise FgaError(503, "unavailable", "the OpenFGA double is failing writes")
        store = self._store(request)
        body = await request.json()
        engine = store.engine(body.get("authorization_model_id"))
        writes = _keys(body.get("writes"))
        deletes = _keys(body.get("deletes"))
        if len(set(writes)) != len(writes) or len(set(deletes)) != len(deletes):
            raise FgaError(400, "duplicate_tuple_in_write", "duplicate tuple in one write request")
        # on_duplicate / on_missing "ignore" (OpenFGA >= 1.10) skip what is already so; else all or nothing
        ignore_present = (body.get("writes") or {}).get("on_duplicate") == "ignore"
        ignore_absent = (body.get("deletes") or {}).get("on_missing") == "ignore"
        for user, relation, obj in writes:
            engine.validate_tuple(user, relation, obj)
            if (user, relation, obj) in store.tuples.keys and not ignore_present:
                raise FgaError(400, "write_failed_due_to_invalid_input",
                               f"cannot write a tuple which already exists: user: '{user}', relation: "
                               f"'{relation}', object: '{obj}'")
        for key in deletes:
            if key not in store.tuples.keys and not ignore_absent:
                raise FgaError(400, "write_failed_due_to_invalid_input",
                               f"cannot delete a tuple which does not exist: user: '{key[0]}', relation: "
                               f"'{key[1]}', object: '{key[2]}'")
        writes = [key for key in writes if key not in store.tuples.keys]
        deletes = [key for key in deletes if key in store.tuples.keys]
        for key in deletes:
            store.tuples.remove(*key)
        for key in writes:
            store.tuples.add(*key)
        return web.json_response({})

    async def _read(self, request: web.Request) -> web.Response:
        store = self._store(request)
        body = await request.json()
        pattern = body.get("tuple_key") or {}
        user, relation, obj = pattern.get("user"), pattern.get("relation"), pattern.get("object") or ""
        object_type, _, object_id = obj.partition(":")
        if obj and not object_id and not user:
            raise FgaError(400, "validation_error", "reading all objects of a type needs a user")
        matches = [
            key for key in sorted(store.tuples.keys)
            if (not user or key[0] == user)
            and (not relation or key[1] == relation)
            and (not obj or (key[2] == obj if object_id else key[2].startswith(object_type + ":")))
        ]
        page_size = int(body.get("page_size") or 50)
        start = int(body.get("continuation_token") or 0)
        page = matches[start:start + page_size]
        token = str(start + page_size) if start + page_size < len(matches) else ""
        tuples = [
            {"key": {"user": u, "relation": r, "object": o}, "timestamp": store.tuples.keys[(u, r, o)]}
            for u, r, o in page
        ]
        return web.json_response({"tuples": tuples, "continuation_token": token})

    async def _check(self, request: web.Request) -> web.Response:
        store = self._store(request)
        body = await request.json()
        key = body["tuple_key"]
        tuples = _with_contextual(store.tuples, body.get("contextual_tuples"))
        allowed = store.engine(body.get("authorization_model_id")).check(
            tuples, key["user"], key["relation"], key["object"]
        )
        return web.json_response({"allowed": allowed, "resolution": ""})

    async def _batch_check(self, request: web.Request) -> web.Response:
        store = self._store(request)
        body = await request.json()
        engine = store.engine(body.get("authorization_model_id"))
        result = {}
        for item in body.get("checks") or []:
            key = item["tuple_key"]
            try:
                tuples = _with_contextual(store.tuples, item.get("contextual_tuples"))
                result[item["correlation_id"]] = {
                    "allowed": engine.check(tuples, key["user"], key["relation"], key["object"])
                }
            except FgaError as exc:
                result[item["correlation_id"]] = {"allowed": False, "error": {"input_error": exc.code,
                                                                              "message": exc.message}}
        return web.json_response({"result": result})

    async def _list_objects(self, request: web.Request) -> web.Response:
        store = self._store(request)
        body = await request.json()
        tuples = _with_contextual(store.tuples, body.get("contextual_tuples"))
        objects = store.engine(body.get("authorization_model_id")).list_objects(
            tuples, body["user"], body["relation"], body["type"]
        )
        if self.list_objects_max_results:
            objects = objects[:self.list_objects_max_results]
        if self.list_objects_seconds_per_object:
            needed = len(objects) * self.list_objects_seconds_per_object
            await asyncio.sleep(min(needed, self.list_objects_deadline))
            if needed > self.list_objects_deadline:  # stopped at the deadline: what it found by then
                objects = objects[:int(self.list_objects_deadline / self.list_objects_seconds_per_object)]
        return web.json_response({"objects": objects})


def _keys(section: dict | None) -> list[tuple[str, str, str]]:
    return [(k["user"], k["relation"], k["object"]) for k in ((section or {}).get("tuple_keys") or [])]


def _with_contextual(tuples: TupleIndex, contextual: dict | None) -> TupleIndex:
    extra = _keys(contextual)
    if not extra:
        return tuples
    merged = TupleIndex()
    for key in list(tuples.keys) + extra:
        merged.add(*key)
    return merged


def evaluate_offline(model: dict, tuples: Iterable[tuple[str, str, str]]) -> tuple[Engine, TupleIndex]:
    """The double's engine without HTTP, for the conformance generator."""
    engine = Engine(model)
    index = TupleIndex()
    for user, relation, obj in tuples:
        engine.validate_tuple(user, relation, obj)
        index.add(user, relation, obj)
    return engine, index


__all__ = ["Engine", "FgaError", "OpenFgaDouble", "TupleIndex", "evaluate_offline", "new_ulid"]
