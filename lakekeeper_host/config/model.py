"""The host's configuration classes. Names and defaults follow Lakekeeper (docs/configuration.md).

Every class here is structured from the same flat ``LAKEKEEPER__`` key space; plugins add their
own classes the same way (``Settings.section``).
"""

from __future__ import annotations

from datetime import timedelta

from attrs import field, frozen, validators

from lakekeeper_host.config.types import Secret

NIL_UUID = "00000000-0000-0000-0000-000000000000"
UNSAFE_ENCRYPTION_KEY = "<This is unsafe, please set a proper key>"
DEFAULT_RESERVED_NAMESPACES = ("system", "examples", "information_schema")


# 0 lets the operating system pick a free port
PORT_NUMBER = validators.and_(validators.ge(0), validators.le(65535))


@frozen
class MetricsConfig:
    port: int = field(default=9000, validator=PORT_NUMBER)
    enabled: bool = True


@frozen
class IdempotencyConfig:
    enabled: bool = True
    lifetime: timedelta = timedelta(minutes=30)
    grace_period: timedelta = timedelta(minutes=5)
    cleanup_timeout: timedelta = timedelta(seconds=30)


@frozen
class DebugConfig:
    migrate_before_serve: bool = False
    log_request_bodies: bool = False


@frozen
class CacheEntryConfig:
    enabled: bool = True
    capacity: int = 1000
    time_to_live_secs: int = 60


@frozen
class CacheConfig:
    warehouse: CacheEntryConfig = CacheEntryConfig()
    namespace: CacheEntryConfig = CacheEntryConfig()
    secrets: CacheEntryConfig = CacheEntryConfig(capacity=500, time_to_live_secs=600)
    stc: CacheEntryConfig = CacheEntryConfig(capacity=10000, time_to_live_secs=3600)
    # loadTable/loadView lookups, kept until the change feed reports a change (no TTL; PostgreSQL)
    tabular: CacheEntryConfig = CacheEntryConfig(capacity=10000, time_to_live_secs=0)


@frozen
class EventsConfig:
    """``LAKEKEEPER__EVENTS__*``: the in-process queue in front of every event sink."""

    # events held per sink while it is slow or down; beyond that new events are dropped
    queue_capacity: int = field(default=10000, validator=validators.ge(1))


@frozen
class UiConfig:
    """``LAKEKEEPER__UI__*`` (Lakekeeper §4.11): the web console at ``/ui``.

    Login is offered iff ``LAKEKEEPER__OPENID_PROVIDER_URI`` is set; ``openid_provider_uri``
    defaults to it. Paths are relative to ``/ui``. ``enable_surveys`` is accepted for
    compatibility (this console runs no surveys). ``session_secret`` is ours: the key of the
    console's session cookie (default: derived from ``PG_ENCRYPTION_KEY``, shared by all workers).
    """

    enabled: bool = True
    openid_provider_uri: str | None = None
    openid_client_id: str = "lakekeeper"
    openid_redirect_path: str = "/callback"
    openid_scope: str = "openid profile email"
    openid_resource: str | None = None
    openid_post_logout_redirect_path: str = "/logout"
    openid_post_logout_redirect_url: str | None = None
    openid_post_logout_redirect_disabled: bool = False
    openid_token_type: str = field(default="access_token", validator=validators.in_(("access_token", "id_token")))
    lakekeeper_url: str | None = None
    enable_surveys: bool = True
    session_secret: Secret | None = None


@frozen
class HostConfig:
    """General server configuration (Lakekeeper §4.1, §4.5, §4.9)."""

    # external URL used in self-links (default: from Host / X-Forwarded-* headers)
    base_uri: str | None = None
    # address to listen on (API and metrics); unset: 127.0.0.1 for the embedded default (a laptop),
    # 0.0.0.0 (all interfaces) with PostgreSQL
    bind_ip: str | None = None
    # where the catalog listens
    listen_port: int = field(default=8181, validator=PORT_NUMBER)
    # hypercorn worker processes
    workers: int = 1
    use_x_forwarded_headers: bool = True
    # requests without x-project-id use DEFAULT_PROJECT_ID
    enable_default_project: bool = True
    default_project_id: str = NIL_UUID
    # extra reserved top-level namespaces (system, examples, information_schema always)
    reserved_namespaces: tuple[str, ...] = ()
    # CORS origins (* for any)
    allow_origin: tuple[str, ...] = ()
    # /swagger-ui with the OpenAPI documents of both APIs
    serve_swagger_ui: bool = True
    pagination_size_default: int = field(default=100, validator=validators.ge(1))
    pagination_size_max: int = field(default=1000, validator=validators.ge(1))
    # bytes (32 MiB); a larger body gets 413 RequestEntityTooLarge before it is read
    max_request_body_size: int = field(default=33554432, validator=validators.ge(1))
    # a request (receiving its body included: a slow client) taking longer gets 408 RequestTimeout
    max_request_time: timedelta = timedelta(seconds=30)
    # an idle keep-alive connection, or one whose request headers are not complete, is closed after this
    # (keep it above a load balancer's idle timeout)
    http_keep_alive_timeout: timedelta = timedelta(seconds=75)
    # read-only: writes answer 503
    maintenance_mode: str = field(default="off", validator=validators.in_(("off", "read-only")))
    # skip the storage probes on warehouse creation
    skip_storage_validation: bool = False
    # storage endpoints warehouses may use (comma-separated or JSON list of host, *.domain, host:port,
    # IP, [IPv6]:port and CIDR patterns); unset: any endpoint (docs/security.md, "Storage endpoints")
    allowed_storage_endpoints: tuple[str, ...] = ()
    # refuse storage endpoints that are, or resolve to, link-local or cloud metadata addresses
    block_link_local_storage_endpoints: bool = True
    # system identities (Lakekeeper §4.2): reported by GET /management/v1/info; the storage plugins
    # read the same keys to allow `*-system-identity` credentials
    enable_aws_system_credentials: bool = False
    enable_azure_system_credentials: bool = False
    enable_gcp_system_credentials: bool = False
    # log every change event (the built-in `log` event sink)
    log_cloudevents: bool = False
    # secret store by name: postgres (the database, SQLite too) or a plugin's (kv2)
    secret_backend: str = "postgres"
    # authorizer by name
    authz_backend: str = "allowall"
    # entry-point names not to load
    disabled_plugins: tuple[str, ...] = ()
    # unknown LAKEKEEPER__ keys are errors instead of warnings
    strict_config: bool = False
    # production: refuse to start on the embedded SQLite when no PostgreSQL is configured
    require_postgres: bool = False
    trace_plugins: bool = False
    # user ids (JSON list) allowed every control-plane action whatever the authorizer says; never data access
    instance_admins: tuple[str, ...] = ()
    # embedded default: where SQLite and the `demo` file warehouse live
    data_dir: str = "lakekeeper-data"
    # embedded default: create project + `demo` warehouse on first start
    embedded_quickstart: bool = True
    # a task worker's sleep after finding no due task
    task_poll_interval: timedelta = timedelta(seconds=10)
    task_soft_deletion_workers: int = 2
    task_tabular_purge_workers: int = 2
    task_log_cleanup_workers: int = 2
    task_max_seconds_since_last_heartbeat: int = 3600
    default_tabular_expiration_delay_seconds: int = 604800
    metrics: MetricsConfig = MetricsConfig()
    idempotency: IdempotencyConfig = IdempotencyConfig()
    debug: DebugConfig = DebugConfig()
    cache: CacheConfig = CacheConfig()
    events: EventsConfig = EventsConfig()
    ui: UiConfig = UiConfig()
    # json or text
    log_format: str = "json"
    log_level: str = "info"


    @property
    def all_reserved_namespaces(self) -> frozenset[str]:
        return frozenset(n.lower() for n in (*DEFAULT_RESERVED_NAMESPACES, *self.reserved_namespaces))


@frozen
class PgConfig:
    """PostgreSQL connection (Lakekeeper's flat ``PG_*`` keys)."""

    # read pool (a replica); default: the write URL
    pg_database_url_read: Secret | None = None
    # PostgreSQL, postgresql://user:password@host:5432/db; unset: the embedded SQLite
    pg_database_url_write: Secret | None = None
    # instead of the URLs: hosts, port, user, password and database one by one
    pg_host_r: str | None = None
    pg_host_w: str | None = None
    pg_port: int = 5432
    pg_user: str | None = None
    pg_password: Secret | None = None
    pg_database: str | None = None
    # a dedicated schema (search_path); migrate creates it
    pg_schema: str | None = None
    # encrypts stored credentials (secret_backend postgres); set a long random key in production
    pg_encryption_key: Secret = Secret(UNSAFE_ENCRYPTION_KEY)
    pg_read_pool_connections: int = 10
    pg_write_pool_connections: int = 5
    # seconds a request waits for a pooled connection before a 503
    pg_acquire_timeout: int = 5
    # libpq's disable ... verify-full (or sslmode in the URL)
    pg_ssl_mode: str | None = None
    pg_ssl_root_cert: str | None = None
    # embedded: explicit SQLite URL (default <data_dir>/catalog.sqlite)
    sqlite_path: str | None = None

    @property
    def uses_postgres(self) -> bool:
        return bool(self.pg_database_url_write or self.pg_database_url_read or self.pg_host_w)

    @property
    def encryption_key_is_default(self) -> bool:
        return self.pg_encryption_key.get() == UNSAFE_ENCRYPTION_KEY


@frozen
class OpenIdProviderConfig:
    uri: str
    audience: tuple[str, ...] = ()
    additional_issuers: tuple[str, ...] = ()
    scope: str | None = None
    subject_claims: tuple[str, ...] = ("oid", "sub")
    roles_claim: str | None = None
    display_name_template: str | None = None
    require_connected_on_startup: bool = True


@frozen
class RoleConfig:
    """``LAKEKEEPER__ROLE__*`` (Lakekeeper §4.8): limits of the role-in-role membership graph."""

    max_nesting_depth: int = field(default=10, validator=validators.ge(1))


@frozen
class AuthConfig:
    """Authentication (Lakekeeper §4.7)."""

    # OIDC issuer URL: turns authentication on
    openid_provider_uri: str | None = None
    openid_audience: tuple[str, ...] = ()
    openid_additional_issuers: tuple[str, ...] = ()
    openid_scope: str | None = None
    openid_subject_claim: tuple[str, ...] = ("oid", "sub")
    openid_roles_claim: str | None = None
    openid_display_name_template: str | None = None
    openid_providers: dict[str, OpenIdProviderConfig] = field(factory=dict)
    enable_kubernetes_authentication: bool = False
    kubernetes_authentication_audience: tuple[str, ...] = ()
    kubernetes_authentication_accept_legacy_serviceaccount: bool = False
    kubernetes_authentication_subject_source: str = "uid"
    # where the TokenReview API lives (in-cluster default)
    kubernetes_api_url: str = "https://kubernetes.default.svc"
    kubernetes_token_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    # CA bundle for an https TokenReview endpoint (in-cluster default; ignored when absent)
    kubernetes_ca_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
    # LAKEKEEPER__ROLE__MAX_NESTING_DEPTH (read here so the key is known to the config)
    role: RoleConfig = RoleConfig()

    @property
    def enabled(self) -> bool:
        return bool(
            self.openid_provider_uri or self.openid_providers or self.enable_kubernetes_authentication
        )
