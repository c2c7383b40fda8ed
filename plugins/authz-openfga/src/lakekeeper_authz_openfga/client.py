"""The OpenFGA connection: an ``openfga-sdk`` async client, the store and the model (``lakekeeper migrate``).

``migrate`` is idempotent: it finds the store by name (creating it when missing) and the model
by name ``<prefix>-<version>`` through a bookkeeping tuple
``auth_model_id:<id> openfga_id model_version:<prefix>-<version>`` (OpenFGA models carry no name);
only when that tuple is missing does it write the model and the tuple.
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
from openfga_sdk.client.models import ClientTuple, ClientWriteRequest
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
        return ModelLocation(store_id, model_id, created_store=created_store, wrote_model=True)


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
