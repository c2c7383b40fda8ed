"""Shared state handed to the server layer: backends, store, settings. No Quart globals."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

import pluggy
from attrs import define, field

from lakekeeper_host.config import Settings
from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.metrics import Metrics
from lakekeeper_host.registry import BuildContext, Registry
from lakekeeper_host.serde import WIRE, structure_body
from lakekeeper_host.service.authz import Actor, Authorizer
from lakekeeper_host.service.contracts import ContractCheckers
from lakekeeper_host.service.endpoint_stats import EndpointStatsBuffer
from lakekeeper_host.service.endpoints import EndpointPolicy, Resolver, check_endpoints, resolve_host
from lakekeeper_host.service.events import EventDispatcher
from lakekeeper_host.service.secrets import Secrets
from lakekeeper_host.service.storage import Storage
from lakekeeper_host.store import Store
from lakekeeper_host.store.changes import ChangeFeed
from lakekeeper_host.store.warehouses import WarehouseRow


class Authenticator(Protocol):
    """What the request pipeline needs from authentication (``server/security/authn.py``)."""

    async def authenticate(self, authorization: str | None) -> Actor: ...

    async def close(self) -> None: ...


@define
class AppState:
    settings: Settings
    pm: pluggy.PluginManager
    registry: Registry
    store: Store
    secrets: Secrets
    authorizer: Authorizer
    events: EventDispatcher
    contracts: ContractCheckers
    server_id: str | None = None
    # (warehouse id, warehouse version) -> Storage; profiles are immutable per version
    _storage_cache: dict[tuple[str, int], Storage] = field(factory=dict)
    # the cached storages whose endpoints passed the endpoint policy
    _endpoints_checked: set[tuple[str, int]] = field(factory=set)
    # which storage endpoints warehouses may use (default: from the settings); tests may swap both
    endpoint_policy: EndpointPolicy | None = None
    resolve_host: Resolver = resolve_host
    # process wiring, set by runtime/lifecycle.py at startup
    metrics: Metrics | None = None
    authenticator: Authenticator | None = None  # None: authentication disabled
    change_feed: ChangeFeed | None = None  # PostgreSQL LISTEN/NOTIFY cache invalidation
    endpoint_stats: EndpointStatsBuffer | None = None
    background_tasks: list[asyncio.Task[Any]] = field(factory=list)
    # per-process memory of the server layer
    scan_plans: dict[str, asyncio.Task[Any]] = field(factory=dict)  # asynchronous scan plans still running
    provisioned_users: dict[str, float] = field(factory=dict)  # user id -> when last registered on /config

    def __attrs_post_init__(self) -> None:
        if self.endpoint_policy is None:
            self.endpoint_policy = EndpointPolicy.from_settings(self.settings.host)

    def set_endpoint_policy(self, policy: EndpointPolicy) -> None:
        """Replace the endpoint policy; every storage is checked against it again before its next IO."""
        self.endpoint_policy = policy
        self._endpoints_checked.clear()

    def build_context(self) -> BuildContext:
        return BuildContext(settings=self.settings, db=self.store, server_id=self.server_id)

    # ------------------------------------------------------------ storage profiles

    def parse_profile(self, profile_json: Any) -> Any:
        """Structure a ``storage-profile`` JSON object into the plugin's attrs class."""
        if not isinstance(profile_json, dict) or "type" not in profile_json:
            raise bad_request("storage-profile must be an object with a 'type'", "InvalidStorageProfile")
        spec = self.registry.storage_spec(str(profile_json["type"]))
        if spec is None:
            available = ", ".join(sorted(s.storage_type for s in self.registry.unique(self.registry.storage)))
            raise bad_request(
                f"Unknown storage-profile type {profile_json['type']!r}; available: {available}",
                "InvalidStorageProfile",
            )
        body = {k: v for k, v in profile_json.items() if k != "type"}
        return structure_body(body, spec.profile_cls, path="storage-profile")

    def parse_credential(self, profile_type: str, credential_json: Any) -> Any:
        if credential_json is None:
            return None
        spec = self.registry.storage_spec(profile_type)
        if spec is None or spec.credential_cls is None:
            raise bad_request(
                f"Storage type {profile_type!r} takes no storage-credential", "InvalidStorageCredential"
            )
        if not isinstance(credential_json, dict):
            raise bad_request("storage-credential must be an object", "InvalidStorageCredential")
        ctype = str(credential_json.get("type", profile_type)).lower()
        if self.registry.storage_spec(ctype) is not spec:
            raise bad_request(
                f"storage-credential type {ctype!r} does not match storage-profile type {profile_type!r}",
                "InvalidStorageCredential",
            )
        body = {k: v for k, v in credential_json.items() if k != "type"}
        return structure_body(body, spec.credential_cls, path="storage-credential")

    def profile_to_json(self, profile: Any) -> dict[str, Any]:
        spec_type = type(profile).storage_type
        return {"type": spec_type, **WIRE.unstructure(profile)}

    def build_storage(self, profile: Any, credential: Any = None) -> Storage:
        spec = self.registry.storage_spec(type(profile).storage_type)
        if spec is None:  # pragma: no cover - parse_profile guarantees a spec
            raise CatalogError(500, "InternalServerError", "storage plugin missing")
        return spec.factory(profile, credential, self.build_context())

    async def check_endpoints(self, storage: Storage) -> None:
        """400 ``StorageEndpointNotAllowed`` unless every endpoint of ``storage`` passes the policy."""
        assert self.endpoint_policy is not None
        await check_endpoints(storage.endpoints(), self.endpoint_policy, self.resolve_host)

    async def storage_for(self, warehouse: WarehouseRow, *, io: bool = True) -> Storage:
        """The storage of a warehouse row (cached per warehouse version).

        With ``io`` (the default) its endpoints have passed the endpoint policy, so it may connect;
        ``io=False`` is for location arithmetic only (comparing base locations, immutable fields).
        """
        key = (warehouse.id, warehouse.version)
        storage = self._storage_cache.get(key)
        if storage is None:
            storage = await self._build_for(warehouse)
        if io and key not in self._endpoints_checked:
            await self.check_endpoints(storage)
            self._endpoints_checked.add(key)
        return storage

    async def _build_for(self, warehouse: WarehouseRow) -> Storage:
        key = (warehouse.id, warehouse.version)
        profile_json = warehouse.storage_profile
        if isinstance(profile_json, str):
            profile_json = json.loads(profile_json)
        profile = self.parse_profile(profile_json)
        credential = None
        if warehouse.storage_secret_id:
            secret = await self.secrets.get(warehouse.storage_secret_id)
            credential = self.parse_credential(profile_json["type"], secret)
        storage = self.build_storage(profile, credential)
        for old in [k for k in self._storage_cache if k[0] == warehouse.id]:
            self._storage_cache.pop(old)
            self._endpoints_checked.discard(old)
        self._storage_cache[key] = storage
        return storage
