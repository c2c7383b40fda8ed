"""The ``openfga`` authorizer: every catalog action is the relation ``can_<action>`` of model.fga.

Objects are named as Lakekeeper's model 4.x names them: ``server:<id>``, ``project:<id>``,
``warehouse:<id>``, ``namespace:<id>``, ``lakekeeper_table:<warehouse-id>/<id>``,
``lakekeeper_view:<warehouse-id>/<id>``, ``lakekeeper_generic_table:<warehouse-id>/<id>``,
``role:<id>``; users ``user:<url-encoded id>``; a role as grantee (or as the assumed role of a
caller) is ``role:<id>#assignee``. Actions on ``user`` resources are answered from the caller's
identity and the server's user-management relations (the model keeps no tuples per user).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from urllib.parse import quote, unquote

import aiohttp
from openfga_sdk import ReadRequestTupleKey
from openfga_sdk.client import ClientCheckRequest, OpenFgaClient
from openfga_sdk.client.models import (
    ClientBatchCheckItem,
    ClientBatchCheckRequest,
    ClientListObjectsRequest,
    ClientTuple,
    ClientWriteRequest,
    ClientWriteRequestOnDuplicateWrites,
    ClientWriteRequestOnMissingDeletes,
    ConflictOptions,
)
from openfga_sdk.exceptions import ApiException, RateLimitExceededError, ServiceException

from lakekeeper_authz_openfga.cache import CheckKey, ListKey, TtlCache
from lakekeeper_host.errors import CatalogError
from lakekeeper_host.service.authz import (
    ACTIONS,
    Actor,
    Assignment,
    AuthorizerBase,
    AuthorizerUnavailable,
    CatalogHierarchy,
    Principal,
    PrivilegeDescriptor,
    ReconcileReport,
    Resource,
    grant_action,
)

log = logging.getLogger(__name__)

# what may be granted directly on each kind (the relations with type restrictions in model.fga)
_TABULAR_ASSIGNABLE = ("ownership", "pass_grants", "manage_grants", "describe", "select", "modify", "manage_tags")
ASSIGNABLE: dict[str, tuple[str, ...]] = {
    "server": ("admin", "operator"),
    "project": ("project_admin", "security_admin", "data_admin", "role_creator", "tag_creator", "describe", "select",
                "create", "modify"),
    "warehouse": ("ownership", "pass_grants", "manage_grants", "describe", "select", "create", "modify", "manage_tags"),
    "namespace": ("ownership", "pass_grants", "manage_grants", "describe", "select", "create", "modify", "manage_tags"),
    "table": _TABULAR_ASSIGNABLE,
    "view": _TABULAR_ASSIGNABLE,
    "generic_table": _TABULAR_ASSIGNABLE,
    "role": ("ownership", "assignee"),
}
# what each grantable relation means in this model, for the Grants API's pickers: (category, description)
_PRIVILEGE_MEANINGS: dict[str, tuple[str, str]] = {
    "admin": ("administration", "Administers the whole server; meant for people. An admin may make itself "
              "project admin of any project."),
    "operator": ("administration", "May use every API of the catalog; meant for the machine account that "
                 "provisions projects and warehouses."),
    "project_admin": ("administration", "Full control of the project, its warehouses and their contents, "
                      "including its grants."),
    "security_admin": ("administration", "Manages grants, ownership, roles and tags in the project, without "
                       "access to data or the right to change objects."),
    "data_admin": ("administration", "Manages the project's warehouses and everything in them, but grants "
                   "nothing to anyone."),
    "role_creator": ("administration", "May create roles in the project (not add members to existing ones)."),
    "tag_creator": ("administration", "May create tag definitions in the project."),
    "ownership": ("security", "Owns the object: every privilege on it, its grants included."),
    "pass_grants": ("security", "May hand on the privileges one holds on this object to others."),
    "manage_grants": ("security", "May grant and revoke any privilege on this object and everything below it."),
    "manage_tags": ("metadata", "May attach and detach tags on this object and everything below it."),
    "describe": ("metadata", "May read the object's metadata and list what is inside it."),
    "select": ("read", "May read the object's data (and its metadata)."),
    "create": ("create", "May create objects inside this one."),
    "modify": ("write", "May change the object and its contents, data and schema included."),
}
PRIVILEGES: dict[str, tuple[PrivilegeDescriptor, ...]] = {
    kind: tuple(PrivilegeDescriptor(name, name.replace("_", " "), *reversed(_PRIVILEGE_MEANINGS[name]))
                for name in names)
    for kind, names in ASSIGNABLE.items() if kind != "role"
}
# the OpenFGA type of each host kind (Lakekeeper's names); the others are named as the kind
FGA_TYPE = {"table": "lakekeeper_table", "view": "lakekeeper_view", "generic_table": "lakekeeper_generic_table"}
KIND_OF_TYPE = {fga_type: kind for kind, fga_type in FGA_TYPE.items()}
# kinds whose object id carries the warehouse: <type>:<warehouse-id>/<id>
_IN_WAREHOUSE = frozenset(FGA_TYPE)
# user-resource actions (Lakekeeper's rules): a user may do all of them on themself (also while
# assuming a role); every authenticated caller may read a user given its id (grant dialogs show
# names; listing all users is the server's ``list_users``); the rest is the server relation below
_USER_ACTIONS = {
    "update": "can_update_users",
    "delete": "can_delete_users",
    "read_role_assignments": "can_list_users",
}
# the link a child writes on its parent, by (parent kind, child kind)
_CHILD_LINK = {("project", "warehouse"): "warehouse", ("warehouse", "namespace"): "namespace",
               ("namespace", "namespace"): "child", ("namespace", "table"): "child", ("namespace", "view"): "child",
               ("namespace", "generic_table"): "child"}
# the relation naming a kind's parent
_PARENT_LINK = {"project": "server", "warehouse": "project", "namespace": "parent", "table": "parent",
                "view": "parent", "generic_table": "parent", "role": "project"}
# which object types may hold a given kind as a (non-user) tuple user: reads needed on delete
_REFERENCED_BY = {
    "server": ("project",), "project": ("warehouse", "role"), "warehouse": ("project", "namespace"),
    "namespace": ("warehouse", "namespace", "table", "view", "generic_table"), "table": ("namespace",),
    "view": ("namespace",), "generic_table": ("namespace",),
    "role": ("server", "project", "warehouse", "namespace", "table", "view", "generic_table", "role"),
}
_MANAGED_ACCESS_KINDS = ("warehouse", "namespace")
# the kinds whose objects live in the catalog database (reconcile deletes the tuples of missing ones)
_CATALOG_TYPES = frozenset(FGA_TYPE.get(kind, kind) for kind in _PARENT_LINK)
# (object type, relation) of the hierarchy's own tuples: reconcile makes them exactly the database's
_STRUCTURE = frozenset({(FGA_TYPE.get(kind, kind), relation) for kind, relation in _PARENT_LINK.items()}
                       | {(parent, link) for (parent, _), link in _CHILD_LINK.items()})
# the relation that makes someone the owner of a kind (what on_created writes for the creator)
_OWNER_RELATION = {"project": "project_admin"}
# any user: with the wildcard tuple ``user:* managed_access``, every user has the flag
_PROBE_USER = "user:managed-access-probe"
# managed access on: both wildcards (Lakekeeper's model admits roles, so role grantees are covered too)
_MANAGED_ACCESS_USERS = ("user:*", "role:*")
_WRITE_CHUNK = 100  # OpenFGA's default maximum of tuples per write


@contextlib.asynccontextmanager
async def reaching_openfga() -> AsyncIterator[None]:
    """OpenFGA down, unreachable or failing on its side (5xx, 429) is a 503 with ``Retry-After``
    (:class:`AuthorizerUnavailable`), never a 500 and never an answer: every check fails closed."""
    try:
        yield
    except (ServiceException, RateLimitExceededError) as exc:
        raise AuthorizerUnavailable("OpenFGA", f"it answered {exc.status}") from exc
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise AuthorizerUnavailable("OpenFGA", f"{type(exc).__name__}") from exc


def fga_type(kind: str) -> str:
    return FGA_TYPE.get(kind, kind)


def fga_object(resource: Resource) -> str:
    if resource.kind not in _PARENT_LINK and resource.kind != "server":
        raise ValueError(f"no OpenFGA object for a {resource.kind!r}")
    if resource.kind in _IN_WAREHOUSE:
        if not resource.warehouse_id:
            raise ValueError(f"a {resource.kind} object needs its warehouse id")
        return f"{FGA_TYPE[resource.kind]}:{resource.warehouse_id}/{resource.id}"
    return f"{resource.kind}:{resource.id}"


def object_id_of(fga_obj: str) -> str:
    """The catalog id in an OpenFGA object (``lakekeeper_table:<wh>/<id>`` -> ``<id>``)."""
    fga_kind, _, rest = fga_obj.partition(":")
    return rest.rpartition("/")[2] if fga_kind in KIND_OF_TYPE else rest


def fga_user_id(user_id: str) -> str:
    return "user:" + quote(user_id, safe="")


def fga_principal(principal: Principal) -> str:
    if principal.kind == "role":
        return f"role:{principal.id}#assignee"
    if principal.kind == "user":
        return fga_user_id(principal.id)
    raise CatalogError(400, "InvalidGrant", f"a grant goes to a user or a role, not a {principal.kind!r}")


def principal_of(fga_user: str) -> Principal | None:
    kind, _, rest = fga_user.partition(":")
    if kind == "user" and rest != "*":
        return Principal("user", unquote(rest))
    if kind == "role" and rest.endswith("#assignee"):
        return Principal("role", rest.removesuffix("#assignee"))
    return None


class OpenFgaAuthorizer(AuthorizerBase):
    name = "openfga"

    def __init__(
        self,
        client: OpenFgaClient,
        *,
        server_id: str,
        max_batch_check_size: int = 50,
        cache: TtlCache | None = None,
        list_cache: TtlCache | None = None,
        list_objects_max_results: int = 1000,
        list_objects_deadline: float = 3.0,
    ) -> None:
        self.client = client
        self.server_id = server_id
        self.max_batch_check_size = max_batch_check_size
        self.cache = cache if cache is not None else TtlCache(0, 0)
        self.list_cache = list_cache if list_cache is not None else TtlCache(0, 0)
        self.list_objects_max_results = list_objects_max_results
        self.list_objects_deadline = list_objects_deadline

    async def close(self) -> None:
        await self.client.close()

    def bind_metrics(self, metrics) -> None:
        """Count cache lookups as ``lakekeeper_cache_requests_total{cache="authz-check"|"authz-list-objects",
        result}``."""
        for cache, name in ((self.cache, "authz-check"), (self.list_cache, "authz-list-objects")):
            counters = {result: metrics.cache.labels(name, result) for result in ("hit", "miss")}
            cache.on_lookup = lambda result, count, counters=counters: counters[result].inc(count)

    async def health(self) -> bool:
        await self.client.get_store()
        return True

    # ------------------------------------------------------------------ checks

    def _subject(self, actor: Actor) -> str | None:
        if actor.is_anonymous:
            return None
        if actor.assumed_role:
            return f"role:{actor.assumed_role}#assignee"
        return fga_user_id(actor.user_id)

    def _plan(self, actor: Actor, subject: str | None, action: str, resource: Resource) -> bool | CheckKey:
        """A decision without OpenFGA (True/False), or the check that decides.

        Instance admins (``LAKEKEEPER__INSTANCE_ADMINS``) are the host's business
        (``lakekeeper_host.server.authorize``): this authorizer answers from the tuples alone."""
        if action not in ACTIONS.get(resource.kind, ()):
            raise ValueError(f"unknown action {action!r} for a {resource.kind!r}")
        if subject is None:
            return False
        if resource.kind == "user":
            if resource.id == actor.user_id or action == "read":
                return True
            return (subject, _USER_ACTIONS[action], f"server:{self.server_id}")
        return (subject, f"can_{action}", fga_object(resource))

    async def is_allowed(self, actor: Actor, action: str, resource: Resource) -> bool:
        return (await self._decide(actor, [(action, resource)]))[0]

    async def are_allowed(self, actor: Actor, action: str, resources: Sequence[Resource]) -> list[bool]:
        return await self._decide(actor, [(action, r) for r in resources])

    async def allowed_actions(self, actor: Actor, resource: Resource) -> list[str]:
        actions = ACTIONS.get(resource.kind, ())
        decisions = await self._decide(actor, [(a, resource) for a in actions])
        return [action for action, ok in zip(actions, decisions, strict=True) if ok]

    async def principal_allowed_actions(
        self, principal: Principal, resource: Resource, actions: Sequence[str] | None = None
    ) -> list[str]:
        """A role's answer is what its assignees get through it (``role:<id>#assignee``)."""
        wanted = ACTIONS.get(resource.kind, ()) if actions is None else actions
        if principal.kind == "role":
            for action in wanted:
                if action not in ACTIONS.get(resource.kind, ()):
                    raise ValueError(f"unknown action {action!r} for a {resource.kind!r}")
            subject = fga_principal(principal)
            if resource.kind == "user":
                keys = [(subject, _USER_ACTIONS[a], f"server:{self.server_id}") for a in wanted if a != "read"]
            else:
                keys = [(subject, f"can_{a}", fga_object(resource)) for a in wanted]
            answers = iter(await self._checks(keys) if keys else [])
            decisions = [True if resource.kind == "user" and a == "read" else next(answers) for a in wanted]
        else:
            decisions = await self._decide(Actor(user_id=principal.id), [(a, resource) for a in wanted])
        return [action for action, ok in zip(wanted, decisions, strict=True) if ok]

    async def _decide(self, actor: Actor, questions: Sequence[tuple[str, Resource]]) -> list[bool]:
        subject = self._subject(actor)
        plans = [self._plan(actor, subject, action, resource) for action, resource in questions]
        keys = [p for p in plans if not isinstance(p, bool)]
        if keys and not await self._may_act_as_role(actor):
            return [False] * len(plans)  # not a member of the role it claims
        answers = dict(zip(keys, await self._checks(keys), strict=True)) if keys else {}
        return [p if isinstance(p, bool) else answers[p] for p in plans]

    async def _may_act_as_role(self, actor: Actor) -> bool:
        """A caller assuming a role (``x-assume-role``) must be able to assume it; others pass."""
        if not actor.assumed_role:
            return True
        return (await self._checks([(fga_user_id(actor.user_id), "can_assume", f"role:{actor.assumed_role}")]))[0]

    async def visible_ids(self, actor: Actor, action: str, kind: str) -> frozenset[str] | None:
        """ListObjects ``can_<action>`` on type ``kind`` for the caller (cached like checks).

        None -- "check the rows instead" -- when the answer may be incomplete: OpenFGA stops at its
        max results or deadline without saying so, so an answer that reaches either is not trusted
        (``LIST_OBJECTS_MAX_RESULTS`` / ``LIST_OBJECTS_DEADLINE_SECS``); also when ListObjects fails.
        """
        if self.list_objects_max_results <= 0 or kind not in _PARENT_LINK or action not in ACTIONS[kind]:
            return None
        subject = self._subject(actor)
        if subject is None:
            return frozenset()  # anonymous callers are denied everything
        if not await self._may_act_as_role(actor):
            return frozenset()
        key: ListKey = (subject, f"can_{action}", kind)
        cached = self.list_cache.get_many([key])
        if key in cached:
            return cached[key]
        generation = self.list_cache.generation
        started = time.monotonic()
        try:
            async with reaching_openfga():
                response = await self.client.list_objects(ClientListObjectsRequest(user=subject, relation=key[1],
                                                                                   type=fga_type(kind)))
        except AuthorizerUnavailable:
            raise
        except ApiException as exc:
            log.warning("OpenFGA ListObjects %s failed, checking rows instead: %s", key, exc)
            return None
        elapsed = time.monotonic() - started
        objects = response.objects or []
        ids: frozenset[str] | None = frozenset(object_id_of(obj) for obj in objects)
        if len(objects) >= self.list_objects_max_results or elapsed >= self.list_objects_deadline:
            ids = None  # possibly cut short by OpenFGA's limits: unknown (remembered, so not asked again)
        self.list_cache.put(key, ids, generation)
        return ids

    async def _checks(self, keys: Sequence[CheckKey]) -> list[bool]:
        """Answer checks: from the cache, else one check, else batch checks of at most the batch size."""
        unique = list(dict.fromkeys(keys))
        results = self.cache.get_many(unique)
        missing = [key for key in unique if key not in results]
        generation = self.cache.generation
        if len(missing) == 1:
            user, relation, obj = missing[0]
            async with reaching_openfga():
                response = await self.client.check(ClientCheckRequest(user=user, relation=relation, object=obj))
            results[missing[0]] = bool(response.allowed)
        elif missing:
            items = [ClientBatchCheckItem(user=u, relation=r, object=o, correlation_id=str(i))
                     for i, (u, r, o) in enumerate(missing)]
            async with reaching_openfga():
                response = await self.client.batch_check(
                    ClientBatchCheckRequest(checks=items), {"max_batch_size": self.max_batch_check_size}
                )
            for single in response.result:
                if single.error is not None:
                    log.warning("OpenFGA check %s failed: %s", missing[int(single.correlation_id)], single.error)
                results[missing[int(single.correlation_id)]] = bool(single.allowed) and single.error is None
        for key in missing:
            self.cache.put(key, results[key], generation)
        return [results[key] for key in keys]

    async def _require(self, actor: Actor, action: str, resource: Resource) -> None:
        if not await self.is_allowed(actor, action, resource):
            raise CatalogError(403, "Forbidden", f"not allowed to {action.replace('_', ' ')} on this {resource.kind}")

    # ------------------------------------------------------------------ tuples

    async def _write(self, writes: Sequence[tuple[str, str, str]] = (), deletes: Sequence[tuple[str, str, str]] = (),
                     ) -> None:
        """Write and delete tuples (already present / already absent is fine), then forget cached answers."""
        options = {"conflict": ConflictOptions(on_duplicate_writes=ClientWriteRequestOnDuplicateWrites.IGNORE,
                                               on_missing_deletes=ClientWriteRequestOnMissingDeletes.IGNORE)}
        operations = [("w", t) for t in writes] + [("d", t) for t in deletes]
        try:
            for start in range(0, len(operations), _WRITE_CHUNK):
                chunk = operations[start:start + _WRITE_CHUNK]
                async with reaching_openfga():
                    await self.client.write(
                        ClientWriteRequest(
                            writes=[ClientTuple(*t) for op, t in chunk if op == "w"] or None,
                            deletes=[ClientTuple(*t) for op, t in chunk if op == "d"] or None,
                        ),
                        options,
                    )
        finally:
            self.cache.invalidate()
            self.list_cache.invalidate()

    async def _read(self, *, object: str | None = None, relation: str | None = None, user: str | None = None,
                    ) -> list[tuple[str, str, str]]:
        """The tuples matching the pattern (no pattern at all: every tuple of the store)."""
        found: list[tuple[str, str, str]] = []
        token = None
        while True:
            options: dict = {"page_size": 100}
            if token:
                options["continuation_token"] = token
            async with reaching_openfga():
                page = await self.client.read(ReadRequestTupleKey(user=user, relation=relation, object=object),
                                              options)
            found.extend((t.key.user, t.key.relation, t.key.object) for t in page.tuples or [])
            token = page.continuation_token
            if not token:
                return found

    # ------------------------------------------------------------------ lifecycle

    async def bootstrap(self, actor: Actor, is_operator: bool) -> None:
        if actor.is_anonymous:
            raise CatalogError(400, "BootstrapRequiresUser", "bootstrapping the openfga authorizer needs a user")
        await self._write([(fga_user_id(actor.user_id), "operator" if is_operator else "admin",
                            f"server:{self.server_id}")])

    def _structure(self, resource: Resource, parent: Resource) -> list[tuple[str, str, str]]:
        child, parent_obj = fga_object(resource), fga_object(parent)
        tuples = [(parent_obj, _PARENT_LINK[resource.kind], child)]
        link = _CHILD_LINK.get((parent.kind, resource.kind))
        if link:
            tuples.append((child, link, parent_obj))
        return tuples

    async def on_created(self, actor: Actor, resource: Resource, parent: Resource | None) -> None:
        writes = []
        if resource.kind == "project" and parent is None:
            parent = Resource("server", self.server_id)
        if parent is not None:
            writes += self._structure(resource, parent)
        owner = self._subject(actor)
        if owner is not None:
            writes.append((owner, "project_admin" if resource.kind == "project" else "ownership",
                           fga_object(resource)))
        await self._write(writes)

    async def on_deleted(self, resource: Resource) -> None:
        if resource.kind == "user":  # a deleted user keeps no grants anywhere
            user = fga_user_id(resource.id)
            doomed = [t for kind in ASSIGNABLE for t in await self._read(user=user, object=f"{fga_type(kind)}:")]
            await self._write(deletes=doomed)
            return
        obj = fga_object(resource)
        as_user = f"{obj}#assignee" if resource.kind == "role" else obj
        doomed = await self._read(object=obj)
        for kind in _REFERENCED_BY.get(resource.kind, ()):
            doomed += await self._read(user=as_user, object=f"{fga_type(kind)}:")
        await self._write(deletes=list(dict.fromkeys(doomed)))

    async def on_moved(self, resource: Resource, new_parent: Resource) -> None:
        obj = fga_object(resource)
        relation = _PARENT_LINK[resource.kind]
        old = await self._read(object=obj, relation=relation)
        deletes = list(old)
        for parent_obj, _, _ in old:
            parent_kind = parent_obj.partition(":")[0]  # namespace or warehouse: the type is the kind
            link = _CHILD_LINK.get((parent_kind, resource.kind))
            if link:
                deletes.append((obj, link, parent_obj))
        await self._write(writes=self._structure(resource, new_parent), deletes=deletes)

    async def on_role_members_changed(
        self, role: Resource, added: Sequence[Principal], removed: Sequence[Principal]
    ) -> None:
        """Members of a role are its ``assignee`` grants: who may assume it and gets its rights."""
        obj = fga_object(role)
        await self._write(writes=[(fga_principal(p), "assignee", obj) for p in added],
                          deletes=[(fga_principal(p), "assignee", obj) for p in removed])

    async def reconcile(
        self, hierarchy: Callable[[], Awaitable[CatalogHierarchy]], *, dry_run: bool = False,
        delete_drift: bool = True,
    ) -> ReconcileReport:
        """Make the hierarchy's tuples (parent and child links, role members) exactly the database's
        and delete every tuple naming an object the database no longer has (as object or as user).

        The store is read first, the database second: an object created meanwhile is in the
        database, so its tuples are never taken for stale. Grants on existing objects stay.
        """
        present = set(await self._read())
        catalog = await hierarchy()
        server = f"server:{self.server_id}"
        existing = {server} | {fga_object(o.resource) for o in catalog.objects}
        expected: set[tuple[str, str, str]] = set()
        for item in catalog.objects:
            parent = item.parent if item.parent is not None else Resource("server", self.server_id)
            expected.update(self._structure(item.resource, parent))
        for role_id, member in catalog.role_members:
            expected.add((fga_principal(member), "assignee", f"role:{role_id}"))

        def stale(key: tuple[str, str, str]) -> bool:
            user, relation, obj = key
            obj_type = obj.partition(":")[0]
            user_obj = user.partition("#")[0]
            return ((obj_type in _CATALOG_TYPES and obj not in existing)
                    or (user_obj.partition(":")[0] in _CATALOG_TYPES and user_obj not in existing)
                    or ((obj_type, relation) in _STRUCTURE and key not in expected))

        # add-missing (Lakekeeper's safe default of `openfga reconcile`) only writes
        deletes = sorted(key for key in present if stale(key)) if delete_drift else []
        writes = sorted(expected - present)
        if not dry_run:
            await self._write(writes=writes, deletes=deletes)
        after = (present - set(deletes)) | set(writes)
        owned = {obj for _, relation, obj in after
                 if relation == _OWNER_RELATION.get(obj.partition(":")[0], "ownership")}
        ownerless = sorted(o for o in existing - owned - {server})
        notes = []
        if ownerless:
            notes.append(f"{len(ownerless)} object(s) have no owner; the database does not record who created "
                         "an object, so ownership cannot be restored -- grant it through the permissions API: "
                         + ", ".join(ownerless))
        return ReconcileReport(written=tuple(" ".join(k) for k in writes),
                               deleted=tuple(" ".join(k) for k in deletes), notes=tuple(notes))

    # ------------------------------------------------------------------ permissions API

    async def read_assignments(self, resource: Resource, relations: Sequence[str] | None = None) -> list[Assignment]:
        assignable = ASSIGNABLE.get(resource.kind, ())
        wanted = [r for r in (relations or assignable) if r in assignable]
        found = []
        for user, relation, _ in await self._read(object=fga_object(resource)):
            principal = principal_of(user)
            if relation in wanted and principal is not None:
                found.append(Assignment(relation, principal))
        return found

    async def write_assignments(
        self, actor: Actor, resource: Resource, writes: Sequence[Assignment], deletes: Sequence[Assignment]
    ) -> None:
        assignable = ASSIGNABLE.get(resource.kind, ())
        for assignment in (*writes, *deletes):
            if assignment.relation not in assignable:
                raise CatalogError(400, "InvalidGrant", f"{assignment.relation!r} cannot be granted on a "
                                   f"{resource.kind}; grantable: {', '.join(assignable)}")
        actions = sorted({grant_action(resource.kind, a.relation) for a in (*writes, *deletes)})
        decisions = await self._decide(actor, [(a, resource) for a in actions])
        denied = [a for a, ok in zip(actions, decisions, strict=True) if not ok]
        if denied:
            raise CatalogError(403, "Forbidden", f"not allowed to {', '.join(d.replace('_', ' ') for d in denied)} "
                               f"on this {resource.kind}")
        obj = fga_object(resource)
        await self._write(
            writes=[(fga_principal(a.principal), a.relation, obj) for a in writes],
            deletes=[(fga_principal(a.principal), a.relation, obj) for a in deletes],
        )

    def privileges(self, kind: str) -> Sequence[PrivilegeDescriptor]:
        return PRIVILEGES.get(kind, ())

    async def managed_access(self, resource: Resource) -> dict[str, bool]:
        if resource.kind not in _MANAGED_ACCESS_KINDS:
            raise CatalogError(400, "InvalidResource", f"a {resource.kind} has no managed access")
        obj = fga_object(resource)
        own = any([await self._read(object=obj, relation="managed_access", user=u) for u in _MANAGED_ACCESS_USERS])
        if resource.kind == "warehouse":
            return {"managed-access": own}
        parents = await self._read(object=obj, relation="parent")
        inherited = bool(parents) and (await self._checks([(_PROBE_USER, "managed_access_inheritance",
                                                             parents[0][0])]))[0]
        return {"managed-access": own, "managed-access-inherited": inherited}

    async def set_managed_access(self, actor: Actor, resource: Resource, enabled: bool) -> None:
        if resource.kind not in _MANAGED_ACCESS_KINDS:
            raise CatalogError(400, "InvalidResource", f"a {resource.kind} has no managed access")
        await self._require(actor, "set_managed_access", resource)
        keys = [(user, "managed_access", fga_object(resource)) for user in _MANAGED_ACCESS_USERS]
        await self._write(writes=keys if enabled else [], deletes=[] if enabled else keys)

