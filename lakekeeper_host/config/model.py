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


@frozen
class MetricsConfig:
    port: int = 9000
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
class HostConfig:
    """General server configuration (Lakekeeper §4.1, §4.5, §4.9)."""

    base_uri: str | None = None
    # None: 127.0.0.1 for the embedded default (a laptop), 0.0.0.0 with PostgreSQL
    bind_ip: str | None = None
    listen_port: int = 8181
    workers: int = 1
    use_x_forwarded_headers: bool = True
    enable_default_project: bool = True
    default_project_id: str = NIL_UUID
    reserved_namespaces: tuple[str, ...] = ()
    allow_origin: tuple[str, ...] = ()
    serve_swagger_ui: bool = True
    pagination_size_default: int = field(default=100, validator=validators.ge(1))
    pagination_size_max: int = field(default=1000, validator=validators.ge(1))
    max_request_body_size: int = 33554432
    max_request_time: timedelta = timedelta(seconds=30)
    maintenance_mode: str = field(default="off", validator=validators.in_(("off", "read-only")))
    skip_storage_validation: bool = False
    # system identities (Lakekeeper §4.2): reported by GET /management/v1/info; the storage plugins
    # read the same keys to allow `*-system-identity` credentials
    enable_aws_system_credentials: bool = False
    enable_azure_system_credentials: bool = False
    enable_gcp_system_credentials: bool = False
    log_cloudevents: bool = False
    secret_backend: str = "postgres"
    authz_backend: str = "allowall"
    disabled_plugins: tuple[str, ...] = ()
    strict_config: bool = False
    trace_plugins: bool = False
    instance_admins: tuple[str, ...] = ()
    # embedded default: where SQLite and the `demo` file warehouse live
    data_dir: str = "lakekeeper-data"
    # embedded default: create project + `demo` warehouse on first start
    embedded_quickstart: bool = True
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
    log_format: str = "json"
    log_level: str = "info"


    @property
    def all_reserved_namespaces(self) -> frozenset[str]:
        return frozenset(n.lower() for n in (*DEFAULT_RESERVED_NAMESPACES, *self.reserved_namespaces))


@frozen
class PgConfig:
    """PostgreSQL connection (Lakekeeper's flat ``PG_*`` keys)."""

    pg_database_url_read: Secret | None = None
    pg_database_url_write: Secret | None = None
    pg_host_r: str | None = None
    pg_host_w: str | None = None
    pg_port: int = 5432
    pg_user: str | None = None
    pg_password: Secret | None = None
    pg_database: str | None = None
    pg_schema: str | None = None
    pg_encryption_key: Secret = Secret(UNSAFE_ENCRYPTION_KEY)
    pg_read_pool_connections: int = 10
    pg_write_pool_connections: int = 5
    pg_acquire_timeout: int = 5
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
