"""Authorization interface. The built-in ``allowall`` allows everything; plugins add real ones.

Hidden objects are reported as 404 by the server layer, never 403, so existence is not leaked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from attrs import frozen

from lakekeeper_host.errors import CatalogError


@frozen
class Actor:
    """Who is calling: anonymous, or an authenticated principal (optionally assuming a role)."""

    user_id: str | None = None
    name: str | None = None
    email: str | None = None
    idp: str | None = None
    assumed_role: str | None = None
    claims: dict[str, Any] | None = None

    @property
    def is_anonymous(self) -> bool:
        return self.user_id is None

    def describe(self) -> dict[str, str]:
        if self.user_id is None:
            return {"type": "anonymous"}
        if self.assumed_role:
            return {"type": "role", "principal": self.user_id, "assumed-role": self.assumed_role}
        return {"type": "principal", "principal": self.user_id}


ANONYMOUS = Actor()


class AuthorizerUnavailable(CatalogError):
    """The authorizer's backend (an OpenFGA server, a policy service) cannot be reached or answers
    with its own failure: 503 with ``Retry-After``, as when the database is down. Nothing is allowed
    meanwhile (fail closed); the request may be retried once the backend is back."""

    def __init__(self, backend: str, detail: str, retry_after_seconds: int = 1):
        super().__init__(
            503, "AuthorizationBackendUnavailable",
            f"The authorization backend ({backend}) is unavailable, so nothing can be decided right now; "
            f"retry later ({detail})",
            headers={"Retry-After": str(retry_after_seconds)},
        )


@frozen
class Resource:
    """What an action is about: ``kind`` in server|project|warehouse|namespace|table|view|generic_table|
    role|user."""

    kind: str
    id: str
    warehouse_id: str | None = None


# Lakekeeper's catalog action vocabulary (``service/authz/mod.rs``), per resource kind, in the
# snake_case the host and every authorizer use. An authorizer maps them onto its own model
# (OpenFGA: the relation ``can_<action>``); "my access" answers with a subset of these.
ACTIONS: dict[str, tuple[str, ...]] = {
    "server": ("create_project", "update_users", "delete_users", "list_users", "provision_users", "read_assignments",
               "grant_admin", "grant_operator", "list_all_projects"),
    "project": ("create_warehouse", "delete", "rename", "get_metadata", "list_warehouses", "include_in_list",
                "create_role", "list_roles", "search_roles", "get_endpoint_statistics", "modify_task_queue_config",
                "get_task_queue_config", "get_project_tasks", "control_project_tasks", "create_tag", "list_tags",
                "read_assignments", "grant_role_creator", "grant_tag_creator", "grant_create", "grant_describe",
                "grant_modify", "grant_select", "grant_project_admin", "grant_security_admin", "grant_data_admin"),
    "warehouse": ("create_namespace", "accept_moved_namespace", "delete", "update_storage",
                  "update_storage_credential", "get_metadata", "get_config", "list_namespaces", "list_everything",
                  "use", "include_in_list", "deactivate", "activate", "rename", "list_deleted_tabulars",
                  "modify_soft_deletion", "get_task_queue_config", "modify_task_queue_config", "get_all_tasks",
                  "control_all_tasks", "set_protection", "set_format_version_policy", "get_endpoint_statistics",
                  "manage_tags", "read_assignments", "grant_create", "grant_describe", "grant_modify", "grant_select",
                  "grant_pass_grants", "grant_manage_grants", "grant_manage_tags", "change_ownership",
                  "set_managed_access"),
    "namespace": ("create_table", "create_view", "create_generic_table", "create_namespace", "accept_moved_namespace",
                  "accept_moved_tabular", "delete", "update_properties", "get_metadata", "list_tables",
                  "list_views", "list_generic_tables", "list_namespaces", "list_everything", "set_protection",
                  "include_in_list", "move", "manage_tags", "read_assignments", "grant_create", "grant_describe",
                  "grant_modify", "grant_select", "grant_pass_grants", "grant_manage_grants", "grant_manage_tags",
                  "change_ownership", "set_managed_access"),
    "table": ("drop", "write_data", "read_data", "get_metadata", "commit", "rename", "move", "include_in_list",
              "undrop", "get_tasks", "control_tasks", "set_protection", "manage_tags", "read_assignments",
              "grant_pass_grants", "grant_manage_grants", "grant_describe", "grant_select", "grant_modify",
              "grant_manage_tags", "change_ownership"),
    "view": ("drop", "get_metadata", "select", "commit", "include_in_list", "rename", "move", "undrop", "get_tasks",
             "control_tasks", "set_protection", "manage_tags", "read_assignments", "grant_pass_grants",
             "grant_manage_grants", "grant_describe", "grant_select", "grant_modify", "grant_manage_tags",
             "change_ownership"),
    "generic_table": ("drop", "write_data", "read_data", "get_metadata", "rename", "move", "include_in_list",
                      "undrop", "get_tasks", "control_tasks", "set_protection", "manage_tags", "read_assignments",
                      "grant_pass_grants", "grant_manage_grants", "grant_describe", "grant_select", "grant_modify",
                      "grant_manage_tags", "change_ownership"),
    "role": ("read", "read_metadata", "delete", "update", "assume", "read_assignments", "grant_assignee",
             "change_ownership", "update_source_system"),
    "user": ("read", "update", "delete", "read_role_assignments"),
}


# What Lakekeeper calls data access: instance admins (LAKEKEEPER__INSTANCE_ADMINS) pass every other
# check (the control plane), never these.
DATA_PLANE_ACTIONS = frozenset({("table", "read_data"), ("table", "write_data"), ("view", "select"),
                                ("generic_table", "read_data"), ("generic_table", "write_data")})


@frozen
class Principal:
    """Who a grant or a check on behalf of someone is about: a user or a role (its assignees)."""

    kind: str  # "user" | "role"
    id: str


@frozen
class Assignment:
    """One grant on a resource: ``relation`` (``ownership``, ``select``, ``describe``, ``admin``, ...) held by
    a principal. On the wire: ``{"type": <relation>, "user": <id>}`` or ``{"type": <relation>, "role": <id>}``."""

    relation: str
    principal: Principal


@frozen
class PrivilegeDescriptor:
    """One privilege an authorizer lets the Grants API hand out on a kind of resource: ``name`` (the
    relation a grant writes), a ``display_name`` and ``description`` for pickers, and a ``category``
    (``metadata``, ``read``, ``write``, ``create``, ``security`` or ``administration``)."""

    name: str
    display_name: str
    description: str | None
    category: str | None


def grant_action(kind: str, privilege: str) -> str:
    """The action of ``ACTIONS[kind]`` that allows granting (and revoking) ``privilege``."""
    return "change_ownership" if privilege == "ownership" else f"grant_{privilege}"


@frozen
class CatalogObject:
    """One object as the database has it, below ``parent`` (None: a project, below the server)."""

    resource: Resource
    parent: Resource | None


@frozen
class CatalogHierarchy:
    """What the database holds, for :meth:`Authorizer.reconcile`: every project, warehouse,
    namespace, table, view (staged and soft-deleted ones included) and role, and every role
    membership as (role id, member)."""

    objects: tuple[CatalogObject, ...]
    role_members: tuple[tuple[str, Principal], ...]


@frozen
class ReconcileReport:
    """What :meth:`Authorizer.reconcile` found missing (``written``) and stale (``deleted``), one
    line per record in the authorizer's own words; ``notes`` say what it could not repair. In a
    dry run nothing was changed."""

    written: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


class Authorizer(Protocol):
    """The authorizer contract. The host asks; it never interprets an authorizer's grants itself.

    Resources a caller may not see are reported as 404 by the host (``include_in_list`` filters
    lists, ``get_metadata`` gates single objects). Lifecycle calls run after the database change
    committed and before the request answers; ``on_created`` records the parent link and makes
    the creating actor the owner.
    """

    name: str
    # True for an authorizer that allows everything (the built-in allow-all): the host then asks
    # nothing and records nothing. Read with ``getattr(..., False)``, so plugins may leave it out.
    allows_all: bool

    async def is_allowed(self, actor: Actor, action: str, resource: Resource) -> bool: ...

    async def are_allowed(
        self, actor: Actor, action: str, resources: Sequence[Resource]
    ) -> list[bool]: ...

    async def visible_ids(self, actor: Actor, action: str, kind: str) -> frozenset[str] | None:
        """The ids of every ``kind`` object ``actor`` may ``action`` (lists ask ``include_in_list``),
        or None when this authorizer cannot name them completely and cheaply. A list then reads only
        these rows from the database, so the set must be exact: an authorizer unsure of it answers
        None and the host checks the rows one batch at a time. Optional (read with ``getattr``)."""
        ...

    async def health(self) -> bool: ...

    async def bootstrap(self, actor: Actor, is_operator: bool) -> None:
        """``POST /management/v1/bootstrap``: make ``actor`` the server's ``admin``, or its
        ``operator`` when ``is-operator`` was sent (Lakekeeper's ``Authorizer::bootstrap``).
        Runs inside the bootstrap transaction: raising undoes the bootstrap."""
        ...

    # ------------------------------------------------------------ lifecycle of catalog objects

    async def on_created(self, actor: Actor, resource: Resource, parent: Resource | None) -> None:
        """``resource`` was created below ``parent`` (server > project > warehouse > namespace >
        table/view; project > role) by ``actor``."""
        ...

    async def on_deleted(self, resource: Resource) -> None:
        """``resource`` is gone for good (a soft-deleted table keeps its grants until purged)."""
        ...

    async def on_moved(self, resource: Resource, new_parent: Resource) -> None:
        """A namespace moved, or a table/view was renamed into another namespace."""
        ...

    async def on_role_members_changed(
        self, role: Resource, added: Sequence[Principal], removed: Sequence[Principal]
    ) -> None:
        """Members were added to / removed from ``role`` (``/management/v1/role/{id}/members``; the
        host already checked ``grant_assignee``): they may now act as the role, or no longer."""
        ...

    async def reconcile(
        self, hierarchy: Callable[[], Awaitable[CatalogHierarchy]], *, dry_run: bool = False,
        delete_drift: bool = True,
    ) -> ReconcileReport:
        """``lakekeeper authz reconcile`` / ``openfga reconcile``: repair what lifecycle calls that
        failed (the authorizer was down after a database commit) left behind -- write the missing
        structure of the hierarchy and, with ``delete_drift`` (Lakekeeper's ``add-and-delete-drift``
        mode; ``add-missing`` is False), delete the records the database contradicts and those of
        objects that no longer exist. ``hierarchy()`` reads the database: call it *after* reading
        your own records, so that an object created meanwhile is never taken for a deleted one. Who
        created an object is not in the database: ownership cannot be restored, only reported.
        Optional: ``AuthorizerBase`` has nothing to repair."""
        ...

    # ------------------------------------------------------------ the permissions API

    async def allowed_actions(self, actor: Actor, resource: Resource) -> list[str]:
        """The actions of ``ACTIONS[resource.kind]`` that ``actor`` may perform on ``resource``."""
        ...

    async def principal_allowed_actions(
        self, principal: Principal, resource: Resource, actions: Sequence[str] | None = None
    ) -> list[str]:
        """What a user or role (its assignees) may do on ``resource``, of ``actions`` (default: the
        kind's vocabulary): the permissions API asked about someone else."""
        ...

    async def read_assignments(self, resource: Resource, relations: Sequence[str] | None = None) -> list[Assignment]:
        """The direct grants on ``resource`` (only ``relations`` when given)."""
        ...

    async def write_assignments(
        self, actor: Actor, resource: Resource, writes: Sequence[Assignment], deletes: Sequence[Assignment]
    ) -> None:
        """Grant and revoke, atomically, after checking that ``actor`` may grant each relation
        (raise ``CatalogError`` 403/400 otherwise)."""
        ...

    def privileges(self, kind: str) -> Sequence[PrivilegeDescriptor]:
        """What the Grants API may grant on a ``kind`` (the relations ``write_assignments`` accepts
        there); empty for an authorizer that keeps no grants."""
        ...

    async def managed_access(self, resource: Resource) -> dict[str, bool]:
        """``{"managed-access": bool}`` (namespaces add ``"managed-access-inherited"``)."""
        ...

    async def set_managed_access(self, actor: Actor, resource: Resource, enabled: bool) -> None: ...


class AuthorizerBase:
    """Convenience base: a batch check defaults to concurrent single checks, lists to checking their
    rows (``visible_ids`` is None), "my access" to one batch over the kind's vocabulary, lifecycle
    calls record nothing, and an authorizer without grants of its own answers the permissions API
    with 501 (Lakekeeper's allow-all does too)."""

    name = "base"
    # True only for an authorizer that allows everything: the host then skips every check
    allows_all = False

    async def is_allowed(self, actor: Actor, action: str, resource: Resource) -> bool:
        raise NotImplementedError

    async def are_allowed(self, actor: Actor, action: str, resources: Sequence[Resource]) -> list[bool]:
        return list(await asyncio.gather(*(self.is_allowed(actor, action, r) for r in resources)))

    async def visible_ids(self, actor: Actor, action: str, kind: str) -> frozenset[str] | None:
        return None  # not known: lists check their rows in batches

    async def health(self) -> bool:
        return True

    async def bootstrap(self, actor: Actor, is_operator: bool) -> None:
        return None  # nothing to record for an authorizer without server roles

    async def on_created(self, actor: Actor, resource: Resource, parent: Resource | None) -> None:
        return None

    async def on_deleted(self, resource: Resource) -> None:
        return None

    async def on_moved(self, resource: Resource, new_parent: Resource) -> None:
        return None

    async def on_role_members_changed(
        self, role: Resource, added: Sequence[Principal], removed: Sequence[Principal]
    ) -> None:
        return None

    async def reconcile(
        self, hierarchy: Callable[[], Awaitable[CatalogHierarchy]], *, dry_run: bool = False,
        delete_drift: bool = True,
    ) -> ReconcileReport:
        return ReconcileReport(notes=(f"the authorizer {self.name!r} keeps no records to reconcile",))

    async def allowed_actions(self, actor: Actor, resource: Resource) -> list[str]:
        actions = ACTIONS.get(resource.kind, ())
        allowed = await self._check_actions(actor, resource, actions)
        return [action for action, ok in zip(actions, allowed, strict=True) if ok]

    async def principal_allowed_actions(
        self, principal: Principal, resource: Resource, actions: Sequence[str] | None = None
    ) -> list[str]:
        if principal.kind != "user":
            raise _no_grants(self.name)
        wanted = ACTIONS.get(resource.kind, ()) if actions is None else actions
        allowed = await self._check_actions(Actor(user_id=principal.id), resource, wanted)
        return [action for action, ok in zip(wanted, allowed, strict=True) if ok]

    async def _check_actions(self, actor: Actor, resource: Resource, actions: Sequence[str]) -> list[bool]:
        return list(await asyncio.gather(*(self.is_allowed(actor, action, resource) for action in actions)))

    async def read_assignments(self, resource: Resource, relations: Sequence[str] | None = None) -> list[Assignment]:
        raise _no_grants(self.name)

    async def write_assignments(
        self, actor: Actor, resource: Resource, writes: Sequence[Assignment], deletes: Sequence[Assignment]
    ) -> None:
        raise _no_grants(self.name)

    def privileges(self, kind: str) -> Sequence[PrivilegeDescriptor]:
        return ()  # nothing to grant without grants of its own

    async def managed_access(self, resource: Resource) -> dict[str, bool]:
        raise _no_grants(self.name)

    async def set_managed_access(self, actor: Actor, resource: Resource, enabled: bool) -> None:
        raise _no_grants(self.name)


def _no_grants(backend: str) -> CatalogError:
    return CatalogError(501, "NotImplemented", f"The authorizer {backend!r} keeps no grants; "
                        "set LAKEKEEPER__AUTHZ_BACKEND=openfga to manage permissions")


class AllowAllAuthorizer(AuthorizerBase):
    name = "allowall"
    allows_all = True

    async def is_allowed(self, actor: Actor, action: str, resource: Resource) -> bool:
        return True

    async def are_allowed(self, actor: Actor, action: str, resources: Sequence[Resource]) -> list[bool]:
        return [True] * len(resources)

    async def principal_allowed_actions(
        self, principal: Principal, resource: Resource, actions: Sequence[str] | None = None
    ) -> list[str]:
        return list(ACTIONS.get(resource.kind, ()) if actions is None else actions)
