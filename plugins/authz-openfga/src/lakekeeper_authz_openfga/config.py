"""``LAKEKEEPER__OPENFGA__*``: where OpenFGA is, how to authenticate, which store and model (Lakekeeper §4.8).

Lakekeeper's OpenFGA client speaks gRPC; this plugin speaks OpenFGA's HTTP API (``openfga-sdk``),
so ``ENDPOINT`` is the HTTP address (``http://openfga:8080``). Authentication is an API key
(``API_KEY``), or OAuth2 client credentials (``CLIENT_ID``, ``CLIENT_SECRET``, ``TOKEN_ENDPOINT``,
optional ``SCOPE``), or none.
"""

from __future__ import annotations

import re

from attrs import field, frozen, validators

from lakekeeper_host.config.types import Secret
from lakekeeper_host.registry import StartupError

DEFAULT_MODEL_PREFIX = "collaboration"
# the version of model.fga, in Lakekeeper's numbering: it is compatible with Lakekeeper's model 4.9
# (types lakekeeper_table, ...); a changed model gets a new version so `lakekeeper migrate` writes it
MODEL_VERSION = "4.9"
# versions this plugin wrote before it spoke Lakekeeper's model (types table/view, ids table:<id>):
# `lakekeeper migrate` rewrites the tuples of a store that holds one of them
LEGACY_MODEL_VERSIONS = ("1.0", "1.1", "1.2")
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.0)?$")


def model_version_string(value: str | None) -> str | None:
    """Lakekeeper's version strings: ``4.9``, ``v4.9`` and ``4.9.0`` name the same model (``4.9``)."""
    if value is None or not str(value).strip():
        return None
    found = _VERSION.match(str(value).strip())
    if found is None:
        raise StartupError(f"LAKEKEEPER__OPENFGA__AUTHORIZATION_MODEL_VERSION={value!r}: expected <major>.<minor> "
                           "as Lakekeeper writes it, e.g. 4.9 (or v4.9)")
    return f"{int(found.group(1))}.{int(found.group(2))}"


@frozen
class OpenFgaConfig:
    # OpenFGA's HTTP API (port 8080 of `openfga run`; Lakekeeper's gRPC port 8081 does not answer HTTP)
    # example: http://openfga:8080
    endpoint: str | None = None
    # the store, found by name (`lakekeeper migrate` creates it)
    # example: lakekeeper-prod
    store_name: str = "lakekeeper"
    # the model is written and found as <prefix>-<version>
    # example: collaboration
    authorization_model_prefix: str = DEFAULT_MODEL_PREFIX
    # pin a written model version (Lakekeeper's "<major>.<minor>", also "v4.9"); unset = the model this plugin ships
    # example: 4.9
    authorization_model_version: str | None = field(default=None, converter=model_version_string)
    # a pre-shared key (OpenFGA's --authn-method=preshared)
    # example: key-1
    api_key: Secret | None = None
    # OAuth2 client credentials instead of API_KEY: the client id (with CLIENT_SECRET and TOKEN_ENDPOINT)
    # example: lakekeeper
    client_id: str | None = None
    # the client secret of CLIENT_ID
    # example: s3cret
    client_secret: Secret | None = None
    # the token endpoint for CLIENT_ID
    # example: https://idp.example.com/realms/openfga/protocol/openid-connect/token
    token_endpoint: str | None = None
    # scope asked for with CLIENT_ID (unset: none)
    # example: openfga
    scope: str | None = None
    # checks sent in one batch-check request (at most OpenFGA's OPENFGA_MAX_CHECKS_PER_BATCH_CHECK)
    # example: 200
    max_batch_check_size: int = field(default=50, validator=validators.gt(0))
    # the check-result cache (bounded, TTL); 0 capacity turns it off
    # example: 0
    check_cache_capacity: int = field(default=50_000, validator=validators.ge(0))
    # seconds a check answer is kept (another replica's grant or revocation shows after at most this)
    # example: 2
    check_cache_ttl_secs: float = field(default=10.0, validator=validators.ge(0))
    # Lists ask ListObjects which objects the caller may see; OpenFGA cuts it short at its max results
    # and deadline without saying so, so an answer at either limit counts as unknown (rows are checked).

    # an answer of this many objects is unknown; at most OpenFGA's OPENFGA_LIST_OBJECTS_MAX_RESULTS; 0 = off
    # example: 0
    list_objects_max_results: int = field(default=1000, validator=validators.ge(0))
    # an answer that took this long is unknown; at most OpenFGA's OPENFGA_LIST_OBJECTS_DEADLINE
    # example: 1.5
    list_objects_deadline_secs: float = field(default=3.0, validator=validators.gt(0))
    # ListObjects answers kept (for CHECK_CACHE_TTL_SECS), each up to LIST_OBJECTS_MAX_RESULTS ids; 0 = off
    # example: 0
    list_objects_cache_capacity: int = field(default=1000, validator=validators.ge(0))

    @property
    def model_version(self) -> str:
        return self.authorization_model_version or MODEL_VERSION

    @property
    def model_name(self) -> str:
        """The name the model is written under (and found by): ``<prefix>-<version>``."""
        return f"{self.authorization_model_prefix}-{self.model_version}"

    def require_endpoint(self) -> str:
        if not (self.endpoint or "").strip():
            raise StartupError("LAKEKEEPER__AUTHZ_BACKEND=openfga needs LAKEKEEPER__OPENFGA__ENDPOINT "
                               "(the HTTP address of OpenFGA, e.g. http://openfga:8080)")
        endpoint = self.endpoint.strip().rstrip("/")
        if not endpoint.startswith(("http://", "https://")):
            raise StartupError(f"LAKEKEEPER__OPENFGA__ENDPOINT: must be an http:// or https:// URL, got {endpoint!r}")
        if self.api_key is not None and self.client_id:
            raise StartupError("LAKEKEEPER__OPENFGA__: set either API_KEY or CLIENT_ID/CLIENT_SECRET/TOKEN_ENDPOINT")
        if self.client_id and not (self.client_secret is not None and self.token_endpoint):
            raise StartupError("LAKEKEEPER__OPENFGA__CLIENT_ID needs CLIENT_SECRET and TOKEN_ENDPOINT")
        return endpoint


@frozen
class OpenFgaSettings:
    """The plugin's config class: the ``LAKEKEEPER__OPENFGA__*`` section."""

    openfga: OpenFgaConfig = field(factory=OpenFgaConfig)
