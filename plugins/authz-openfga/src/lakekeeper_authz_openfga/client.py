"""The OpenFGA connection: an ``openfga-sdk`` async client, the store and the model (``lakekeeper migrate``).

``migrate`` is idempotent: it finds the store by name (creating it when missing) and the model
by name ``<prefix>-<version>`` through a bookkeeping tuple
``auth_model_id:<id> openfga_id model_version:<prefix>-<version>`` (OpenFGA models carry no name);
only when that tuple is missing does it write the model and the tuple.

A store written by this plugin before it spoke Lakekeeper's model (versions 1.x: types ``table``
and ``view``, ids ``table:<id>``) is upgraded by the same ``migrate``: every tuple naming a table or
view is rewritten to Lakekeeper's ``lakekeeper_table:<warehouse-id>/<id>`` (the warehouse found
through the namespace tree the store itself holds), managed access also admits roles (``role:*``),
and only then are the old tuples deleted, so no grant is lost on the way (:func:`upgrade_legacy_tuples`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import aiohttp
from attrs import frozen
from openfga_sdk import ReadRequestTupleKey
from openfga_sdk.client import ClientConfiguration, OpenFgaClient
from openfga_sdk.client.models import (
    ClientTuple,
    ClientWriteRequest,
    ClientWriteRequestOnDuplicateWrites,
    ClientWriteRequestOnMissingDeletes,
    ConflictOptions,
)
from openfga_sdk.credentials import CredentialConfiguration, Credentials
from openfga_sdk.exceptions import ApiException
from openfga_sdk.models import CreateStoreRequest

from lakekeeper_authz_openfga.config import MODEL_VERSION, OpenFgaConfig
from lakekeeper_authz_openfga.model import load_model
from lakekeeper_host.registry import StartupError

log = logging.getLogger(__name__)


def make_client(config: OpenFgaConfig, store_id: str | None = None, model_id: str | None = None) -> OpenFgaClient:
    credentials = None
    if config.api_key is not None:
        credentials = Credentials(
            method="api_token", configuration=CredentialConfiguration(api_token=config.api_key.get())
        )
    elif config.client_id:
        credentials = Credentials(
            method="client_credentials",
            configuration=CredentialConfiguration(
                client_id=config.client_id,
                client_secret=config.client_secret.get() if config.client_secret else None,
                api_issuer=config.token_endpoint,
                scopes=config.scope,
            ),
        )
    return OpenFgaClient(
        ClientConfiguration(
            api_url=config.require_endpoint(),
            store_id=store_id,
            authorization_model_id=model_id,
            credentials=credentials,
        )
    )


@frozen
class ModelLocation:
    store_id: str
    model_id: str
    created_store: bool = False
    wrote_model: bool = False


async def find_store(client: OpenFgaClient, name: str) -> str | None:
    token = None
    while True:
        options: dict = {"name": name, "page_size": 100}
        if token:
            options["continuation_token"] = token
        page = await client.list_stores(options)
        for store in page.stores or []:
            if store.name == name:
                return store.id
        token = page.continuation_token
        if not token:
            return None


def _bookkeeping_object(config: OpenFgaConfig) -> str:
    return f"model_version:{config.model_name}"


async def find_model(client: OpenFgaClient, config: OpenFgaConfig) -> str | None:
    """The id of model ``<prefix>-<version>`` in the client's store, if ``migrate`` wrote it."""
    models = await client.read_authorization_models({"page_size": 1})
    if not models.authorization_models:
        return None  # an empty store cannot answer reads yet
    try:
        found = await client.read(ReadRequestTupleKey(relation="openfga_id", object=_bookkeeping_object(config)))
    except ApiException as exc:
        # the latest model of a store shared with other applications may not know our types
        log.debug("no model bookkeeping in the store: %s", exc)
        return None
    for item in found.tuples or []:
        return item.key.user.partition(":")[2]
    return None


@asynccontextmanager
async def _connected(config: OpenFgaConfig) -> AsyncIterator[OpenFgaClient]:
    """A client for one setup step; OpenFGA refusing or missing becomes a ``StartupError`` for the operator."""
    endpoint = config.require_endpoint()
    try:
        async with make_client(config) as client:
            yield client
    except ApiException as exc:
        raise StartupError(f"OpenFGA at {endpoint} answered {exc.status} {exc.reason} "
                           "(check LAKEKEEPER__OPENFGA__ENDPOINT and its credentials)" + grpc_hint(endpoint)) from None
    except (aiohttp.ClientError, OSError) as exc:
        raise StartupError(f"OpenFGA at {endpoint} (LAKEKEEPER__OPENFGA__ENDPOINT) is unreachable: "
                           f"{exc}{grpc_hint(endpoint, exc)}") from None


OPENFGA_HTTP_PORT, OPENFGA_GRPC_PORT = 8080, 8081


def grpc_hint(endpoint: str, error: BaseException | None = None) -> str:
    """Lakekeeper's ``OPENFGA__ENDPOINT`` is OpenFGA's gRPC port (8081); this plugin speaks its HTTP API
    (8080). Said when the configured address looks like the gRPC one, or answered like no HTTP server."""
    parts = urlsplit(endpoint)
    not_http = isinstance(error, (aiohttp.ServerDisconnectedError, aiohttp.ClientResponseError))
    if parts.port != OPENFGA_GRPC_PORT and not not_http:
        return ""
    http = urlunsplit((parts.scheme, f"{parts.hostname}:{OPENFGA_HTTP_PORT}", parts.path, "", ""))
    return (f". Lakekeeper's LAKEKEEPER__OPENFGA__ENDPOINT is OpenFGA's gRPC port ({OPENFGA_GRPC_PORT}); this "
            f"server speaks OpenFGA's HTTP API: use its HTTP port, e.g. {http}")


async def migrate(config: OpenFgaConfig) -> ModelLocation:
    """Create the store (by name) and write the model unless it is there; return where they are."""
    async with _connected(config) as client:
        store_id = await find_store(client, config.store_name)
        created_store = store_id is None
        if store_id is None:
            store_id = (await client.create_store(CreateStoreRequest(name=config.store_name))).id
            log.info("created OpenFGA store %r (%s)", config.store_name, store_id)
        client.set_store_id(store_id)
        model_id = await find_model(client, config)
        if model_id is not None:
            await upgrade_legacy_tuples(client, model_id)
            return ModelLocation(store_id, model_id, created_store=created_store)
        if config.model_version != MODEL_VERSION:
            raise StartupError(
                f"LAKEKEEPER__OPENFGA__AUTHORIZATION_MODEL_VERSION={config.model_version!r} is not in the store "
                f"{config.store_name!r}, and this plugin can only write version {MODEL_VERSION!r}"
            )
        model = load_model()
        written = await client.write_authorization_model(
            {"schema_version": model["schema_version"], "type_definitions": model["type_definitions"]}
        )
        model_id = written.authorization_model_id
        await client.write(
            ClientWriteRequest(writes=[ClientTuple(f"auth_model_id:{model_id}", "openfga_id",
                                                   _bookkeeping_object(config))]),
            {"authorization_model_id": model_id},
        )
        log.info("wrote OpenFGA model %s as %s", config.model_name, model_id)
        await upgrade_legacy_tuples(client, model_id)
        return ModelLocation(store_id, model_id, created_store=created_store, wrote_model=True)


Tuple = tuple[str, str, str]
_LEGACY_TYPES = {"table": "lakekeeper_table", "view": "lakekeeper_view"}
_UPGRADE_CHUNK = 100  # OpenFGA's default maximum of tuples per write


async def _all_tuples(client: OpenFgaClient) -> list[Tuple]:
    found: list[Tuple] = []
    token = None
    while True:
        options: dict = {"page_size": 100}
        if token:
            options["continuation_token"] = token
        page = await client.read(ReadRequestTupleKey(), options)
        found.extend((t.key.user, t.key.relation, t.key.object) for t in page.tuples or [])
        token = page.continuation_token
        if not token:
            return found


def legacy_rewrites(tuples: list[Tuple]) -> tuple[list[Tuple], list[Tuple], list[str]]:
    """What upgrading a store of the 1.x model means: (tuples to write, tuples to delete, notes).

    A ``table:<id>`` / ``view:<id>`` becomes ``lakekeeper_table:<warehouse-id>/<id>`` /
    ``lakekeeper_view:...``, wherever it appears (object or user, ``#relation`` kept). The warehouse
    is the one above the object's parent namespace. A table or view without a parent in the store
    cannot be named in the new model: its tuples stay as they are and a note says so.
    """
    parent: dict[str, str] = {obj: user for user, relation, obj in tuples if relation == "parent"}

    def warehouse_of(obj: str) -> str | None:
        seen = set()
        while obj in parent and obj not in seen:
            seen.add(obj)
            obj = parent[obj]
            if obj.startswith("warehouse:"):
                return obj.partition(":")[2]
        return None

    renamed: dict[str, str] = {}
    orphans: set[str] = set()
    for user, _, obj in tuples:
        for name in (obj, user.partition("#")[0]):
            legacy_type, _, object_id = name.partition(":")
            if legacy_type in _LEGACY_TYPES and name not in renamed and name not in orphans:
                warehouse_id = warehouse_of(name)
                if warehouse_id is None:
                    orphans.add(name)
                else:
                    renamed[name] = f"{_LEGACY_TYPES[legacy_type]}:{warehouse_id}/{object_id}"

    def rename(name: str) -> str:
        base, sep, relation = name.partition("#")
        return renamed.get(base, base) + sep + relation

    writes: list[Tuple] = []
    deletes: list[Tuple] = []
    for key in tuples:
        user, relation, obj = key
        if obj in orphans or user.partition("#")[0] in orphans:
            continue
        new = (rename(user), relation, rename(obj))
        if new != key:
            writes.append(new)
            deletes.append(key)
        if relation == "managed_access" and user == "user:*" and ("role:*", relation, obj) not in tuples:
            writes.append(("role:*", relation, rename(obj)))  # Lakekeeper's managed access admits roles too
    notes = [f"{len(orphans)} legacy object(s) have no parent namespace in the store and keep their old tuples "
             f"(run `lakekeeper openfga reconcile`): {', '.join(sorted(orphans))}"] if orphans else []
    return writes, deletes, notes


async def upgrade_legacy_tuples(client: OpenFgaClient, model_id: str) -> int:
    """Rewrite the tuples of the 1.x model (see the module doc); the number of tuples rewritten.

    New tuples are written first (under the new model) and the old ones deleted after, each step
    idempotent, so an interrupted upgrade is finished by the next ``migrate`` and no grant is ever
    missing in between."""
    tuples = await _all_tuples(client)
    writes, deletes, notes = legacy_rewrites(tuples)
    for note in notes:
        log.warning("OpenFGA upgrade: %s", note)
    if not writes and not deletes:
        return 0
    options = {"authorization_model_id": model_id,
               "conflict": ConflictOptions(on_duplicate_writes=ClientWriteRequestOnDuplicateWrites.IGNORE,
                                           on_missing_deletes=ClientWriteRequestOnMissingDeletes.IGNORE)}
    for start in range(0, len(writes), _UPGRADE_CHUNK):
        await client.write(ClientWriteRequest(writes=[ClientTuple(*t) for t in writes[start:start + _UPGRADE_CHUNK]]),
                           options)
    for start in range(0, len(deletes), _UPGRADE_CHUNK):
        await client.write(
            ClientWriteRequest(deletes=[ClientTuple(*t) for t in deletes[start:start + _UPGRADE_CHUNK]]), options)
    log.info("OpenFGA upgrade: rewrote %d tuple(s) of the 1.x model to Lakekeeper's names", len(deletes))
    return len(deletes)


async def locate(config: OpenFgaConfig) -> ModelLocation:
    """The store and model a serving process uses; both must exist (``lakekeeper migrate`` makes them)."""
    async with _connected(config) as client:
        store_id = await find_store(client, config.store_name)
        if store_id is None:
            raise StartupError(f"OpenFGA store {config.store_name!r} does not exist; run `lakekeeper migrate`")
        client.set_store_id(store_id)
        model_id = await find_model(client, config)
        if model_id is None:
            raise StartupError(
                f"OpenFGA model {config.model_name!r} is not in store {config.store_name!r}; run `lakekeeper migrate`"
            )
        return ModelLocation(store_id, model_id)
