"""The plugin contract: every hook a Lakekeeper plugin can implement.

Hooks are synchronous registration hooks that return lists of specs. The objects those
specs build do the asynchronous work; pluggy itself never awaits anything. Lifecycle hooks
may return an awaitable, which the host awaits.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from lakekeeper_host.registry import BackendSpec, StorageSpec, TaskQueueSpec
    from lakekeeper_host.service.authz import Authorizer
    from lakekeeper_host.service.contracts import ContractChecker
    from lakekeeper_host.service.events import EventSink
    from lakekeeper_host.service.secrets import SecretStore
    from lakekeeper_host.service.state import AppState

PROJECT_NAME = "lakekeeper"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# ---------------------------------------------------------------- backends (called once at startup)


@hookspec
def lakekeeper_storage_profiles() -> list[StorageSpec[Any, Any]]:
    """Return storage specs.

    Each spec names the ``type`` tag of a storage profile (``"s3"``, ``"file"``), the attrs
    classes of the profile and its credential, and a factory that builds the storage object
    (location rules, IO, credential vending) for one warehouse.
    """


@hookspec
def lakekeeper_secret_stores() -> list[BackendSpec[SecretStore, Any]]:
    """Return secret-store specs; one is selected by ``LAKEKEEPER__SECRET_BACKEND``."""


@hookspec
def lakekeeper_authorizers() -> list[BackendSpec[Authorizer, Any]]:
    """Return authorizer specs; one is selected by ``LAKEKEEPER__AUTHZ_BACKEND``."""


@hookspec
def lakekeeper_event_sinks() -> list[BackendSpec[EventSink, Any]]:
    """Return event-sink specs.

    Fan-out: every sink whose factory returns a non-``None`` object receives every event.
    A factory returns ``None`` when its configuration is absent.
    """


@hookspec
def lakekeeper_contract_checkers() -> list[BackendSpec[ContractChecker, Any]]:
    """Return contract-checker specs.

    Every enabled checker runs, in registration order, on table and view commits, drops and
    renames; the first violation blocks the change with a 409.
    """


@hookspec
def lakekeeper_task_queues() -> list[TaskQueueSpec[Any]]:
    """Return task-queue specs: a queue name, its config class and the async task handler."""


# ---------------------------------------------------------------- lifecycle


@hookspec
def lakekeeper_startup(state: AppState) -> Awaitable[None] | None:
    """Called once after all backends are built, before the first request is served."""


@hookspec
def lakekeeper_shutdown(state: AppState) -> Awaitable[None] | None:
    """Called once when the server stops, before backends are closed."""
