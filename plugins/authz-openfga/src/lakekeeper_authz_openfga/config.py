"""``LAKEKEEPER__OPENFGA__*``: where OpenFGA is, how to authenticate, which store and model (Lakekeeper §4.8).

Lakekeeper's OpenFGA client speaks gRPC; this plugin speaks OpenFGA's HTTP API (``openfga-sdk``),
so ``ENDPOINT`` is the HTTP address (``http://openfga:8080``). Authentication is an API key
(``API_KEY``), or OAuth2 client credentials (``CLIENT_ID``, ``CLIENT_SECRET``, ``TOKEN_ENDPOINT``,
optional ``SCOPE``), or none.
"""

from __future__ import annotations

from attrs import field, frozen, validators

from lakekeeper_host.config.types import Secret
from lakekeeper_host.registry import StartupError

DEFAULT_MODEL_PREFIX = "collaboration"
# the version of model.fga; a changed model gets a new version so `lakekeeper migrate` writes it
MODEL_VERSION = "1.2"  # 1.1: can_accept_moved_namespace; 1.2: can_move on tables/views, can_accept_moved_tabular


@frozen
class OpenFgaConfig:
    endpoint: str | None = None
    store_name: str = "lakekeeper"
    authorization_model_prefix: str = DEFAULT_MODEL_PREFIX
    # pin a written model version ("<major>.<minor>"); unset = the model this plugin ships
    authorization_model_version: str | None = None
    api_key: Secret | None = None
    client_id: str | None = None
    client_secret: Secret | None = None
    token_endpoint: str | None = None
    scope: str | None = None
    max_batch_check_size: int = field(default=50, validator=validators.gt(0))
    # the check-result cache (bounded, TTL); 0 capacity turns it off
    check_cache_capacity: int = field(default=50_000, validator=validators.ge(0))
    check_cache_ttl_secs: float = field(default=10.0, validator=validators.ge(0))
    # Lists ask ListObjects which objects the caller may see; OpenFGA cuts it short at its max results
    # and deadline without saying so, so an answer at either limit counts as unknown (rows are checked).

    # an answer of this many objects is unknown; at most OpenFGA's OPENFGA_LIST_OBJECTS_MAX_RESULTS; 0 = off
    list_objects_max_results: int = field(default=1000, validator=validators.ge(0))
    # an answer that took this long is unknown; at most OpenFGA's OPENFGA_LIST_OBJECTS_DEADLINE
    list_objects_deadline_secs: float = field(default=3.0, validator=validators.gt(0))
    # ListObjects answers kept (for CHECK_CACHE_TTL_SECS), each up to LIST_OBJECTS_MAX_RESULTS ids; 0 = off
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
