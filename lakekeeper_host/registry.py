"""Specs that plugins hand back from hooks, and the registry that collects and selects them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pluggy
from attrs import field, frozen

from lakekeeper_host.config import HostConfig, PgConfig, Settings

if TYPE_CHECKING:
    from lakekeeper_host.service.state import AppState
    from lakekeeper_host.service.storage import Storage
    from lakekeeper_host.service.tasks import TaskContext, TaskOutcome, TaskRow
    from lakekeeper_host.store import Store

T = TypeVar("T")
# a settings section's class; a backend's or task queue's config class
C = TypeVar("C")
# a storage type's profile and credential classes (attrs, structured from the management API's JSON)
P = TypeVar("P")
K = TypeVar("K")


class StartupError(Exception):
    """Raised when the plugin set or the configuration cannot produce a working server."""


@frozen
class PluginSettings:
    """The server's configuration as a plugin reads it: the host's own sections, and the plugin's
    (``section(cls)``: an attrs class structured once per process from the same keys; keys no
    section reads are reported at startup)."""

    _settings: Settings

    @property
    def host(self) -> HostConfig:
        return self._settings.host

    @property
    def pg(self) -> PgConfig:
        return self._settings.pg

    @property
    def embedded(self) -> bool:
        """The catalog runs on its embedded SQLite database."""
        return self._settings.embedded

    @property
    def embedded_database_file(self) -> str | None:
        return self._settings.embedded_database_file

    def section(self, cls: type[C]) -> C:
        return self._settings.section(cls)


def plugin_settings(settings: Settings | PluginSettings) -> PluginSettings:
    return settings if isinstance(settings, PluginSettings) else PluginSettings(settings)


@frozen
class BuildContext:
    """What a backend factory may use while it is built."""

    settings: PluginSettings = field(converter=plugin_settings)
    db: Store | None = None  # connected; None for ``lakekeeper migrate`` of an authorizer
    server_id: str | None = None


@frozen
class BackendSpec(Generic[T, C]):
    """A selectable or fan-out backend contributed by a plugin.

    ``factory(config, ctx)`` is awaited once at startup; ``config`` is the settings section of
    ``config_cls`` (``settings.section(config_cls)``; ``None`` without a config class). It returns
    the backend object, or ``None`` when the backend is not configured (fan-out kinds only).
    ``migrate(config, ctx)``, when given, is awaited by ``lakekeeper migrate`` for the selected
    backend (an authorizer writing its model); it must be idempotent and returns a line for the
    operator, or ``None``.
    """

    name: str
    factory: Callable[[C, BuildContext], Awaitable[T | None]]
    config_cls: type[C] | None = None
    aliases: tuple[str, ...] = ()
    migrate: Callable[[C, BuildContext], Awaitable[str | None]] | None = None

    def names(self) -> tuple[str, ...]:
        return (normalize_name(self.name), *(normalize_name(a) for a in self.aliases))


@frozen
class StorageSpec(Generic[P, K]):
    """A storage-profile type contributed by a plugin.

    ``profile_cls`` and ``credential_cls`` are attrs classes structured from the kebab-case
    ``storage-profile`` / ``storage-credential`` JSON (the ``type`` tag is ``storage_type``).
    ``factory(profile, credential, ctx)`` builds the warehouse's storage object (``credential`` is
    None when the warehouse has none); it must be cheap: it runs per warehouse load.
    """

    storage_type: str
    profile_cls: type[P]
    factory: Callable[[P, K | None, BuildContext], Storage]
    credential_cls: type[K] | None = None
    config_cls: type | None = None
    aliases: tuple[str, ...] = ()

    def names(self) -> tuple[str, ...]:
        return (normalize_name(self.storage_type), *(normalize_name(a) for a in self.aliases))


@frozen
class TaskQueueSpec(Generic[C]):
    """A task queue: ``handler(task, ctx)`` runs one attempt of a task (``service/tasks.py``: what it
    gets and returns); ``config_cls`` is its per-warehouse (or per-project) config."""

    name: str
    handler: Callable[[TaskRow, TaskContext], Awaitable[TaskOutcome]]
    config_cls: type[C] | None = None
    default_workers: int = 2
    # queues a user may schedule through the management API (built-in OSS queues are not)
    user_schedulable: bool = False
    # ``await on_config_set(state, project_id, warehouse_id, config)`` after the config API stored a
    # new queue config (a queue that schedules its own tasks reacts to being enabled)
    on_config_set: Callable[[AppState, str, str | None, C], Awaitable[None]] | None = None


def normalize_name(name: str) -> str:
    return name.strip().lower()


@frozen
class Registry:
    """Everything the installed plugins contribute, keyed by normalised name."""

    storage: dict[str, StorageSpec[Any, Any]]
    secret_stores: dict[str, BackendSpec[Any, Any]]
    authorizers: dict[str, BackendSpec[Any, Any]]
    event_sinks: dict[str, BackendSpec[Any, Any]]
    contract_checkers: dict[str, BackendSpec[Any, Any]]
    task_queues: dict[str, TaskQueueSpec[Any]]
    # plugin name -> what it contributed, for `lakekeeper plugins` and /management/v1/plugins
    contributions: dict[str, list[str]] = field(factory=dict)

    @classmethod
    def collect(cls, pm: pluggy.PluginManager) -> Registry:
        contributions: dict[str, list[str]] = {}

        def gather(hook_name: str, key: Callable[[Any], Iterable[str]], kind: str) -> dict[str, Any]:
            result: dict[str, Any] = {}
            owner: dict[str, str] = {}
            hook = getattr(pm.hook, hook_name)
            for impl in hook.get_hookimpls():
                specs = impl.function() or []
                plugin_name = pm.get_name(impl.plugin) or repr(impl.plugin)
                for spec in specs:
                    names = tuple(key(spec))
                    for name in names:
                        if name in result:
                            raise StartupError(
                                f"Duplicate {kind} name {name!r}: contributed by both "
                                f"{owner[name]!r} and {plugin_name!r}"
                            )
                        result[name] = spec
                        owner[name] = plugin_name
                    contributions.setdefault(plugin_name, []).append(f"{kind}:{names[0]}")
            return result

        return cls(
            storage=gather("lakekeeper_storage_profiles", StorageSpec.names, "storage"),
            secret_stores=gather("lakekeeper_secret_stores", BackendSpec.names, "secret-store"),
            authorizers=gather("lakekeeper_authorizers", BackendSpec.names, "authorizer"),
            event_sinks=gather("lakekeeper_event_sinks", BackendSpec.names, "event-sink"),
            contract_checkers=gather(
                "lakekeeper_contract_checkers", BackendSpec.names, "contract-checker"
            ),
            task_queues=gather(
                "lakekeeper_task_queues", lambda s: (normalize_name(s.name),), "task-queue"
            ),
            contributions=contributions,
        )

    @staticmethod
    def _select(table: dict[str, BackendSpec[Any, Any]], name: str, setting: str) -> BackendSpec[Any, Any]:
        try:
            return table[normalize_name(name)]
        except KeyError:
            available = ", ".join(sorted({s.names()[0] for s in table.values()})) or "(none)"
            raise StartupError(
                f"{setting}={name!r} is not a known backend; available: {available}"
            ) from None

    def authorizer(self, name: str) -> BackendSpec[Any, Any]:
        return self._select(self.authorizers, name, "LAKEKEEPER__AUTHZ_BACKEND")

    def secret_store(self, name: str) -> BackendSpec[Any, Any]:
        return self._select(self.secret_stores, name, "LAKEKEEPER__SECRET_BACKEND")

    def storage_spec(self, storage_type: str) -> StorageSpec[Any, Any] | None:
        return self.storage.get(normalize_name(storage_type))

    def unique(self, table: dict[str, T]) -> list[T]:
        """The specs of one table without alias duplicates, in registration order."""
        seen: list[T] = []
        for spec in table.values():
            if not any(spec is s for s in seen):
                seen.append(spec)
        return seen
