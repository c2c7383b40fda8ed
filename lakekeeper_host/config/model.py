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
    """``LAKEKEEPER__METRICS__*`` (Lakekeeper's flat ``LAKEKEEPER__METRICS_PORT`` is an alias of ``PORT``)."""

    # Prometheus /metrics port, on the same address as the API (BIND_IP)
    # example: 9100
    port: int = field(default=9000, validator=PORT_NUMBER)
    # serve /metrics at all
    enabled: bool = True


@frozen
class IdempotencyConfig:
    # honour the Idempotency-Key header of mutating Iceberg requests (a retried request gets the first answer)
    enabled: bool = True
    # how long an answer is kept for its key (advertised in /config as idempotency-key-lifetime)
    # example: PT1H
    lifetime: timedelta = timedelta(minutes=30)
    # extra time a key is kept after its lifetime before it is cleaned up
    # example: PT10M
    grace_period: timedelta = timedelta(minutes=5)
    # longest a cleanup run of expired keys may take
    # example: PT1M
    cleanup_timeout: timedelta = timedelta(seconds=30)


@frozen
class DebugConfig:
    """``LAKEKEEPER__DEBUG__*``: switches for development, as in Lakekeeper."""

    # apply pending migrations on `serve` (the embedded default always does; avoid with several replicas)
    migrate_before_serve: bool = False
    # log every request and response body at debug level (logger lakekeeper_host.requests); costly, may log data
    log_request_bodies: bool = False
    # `lakekeeper` without a command serves (as `serve --force-start`) instead of printing the usage
    auto_serve: bool = False
    # JSON log lines carry the source file and line (filename, line_number)
    extended_logs: bool = False
    # request logs (DEBUG__LOG_REQUEST_BODIES) show the Authorization header instead of redacting it: never in
    # production
    log_authorization_header: bool = False


@frozen
class CacheEntryConfig:
    # keep entries at all (false: every lookup reads the database)
    enabled: bool = True
    # entries kept at most (least recently used go first)
    # example: 20000
    capacity: int = 1000
    # seconds an entry is kept (0: until invalidated)
    # example: 300
    time_to_live_secs: int = 60


@frozen
class CacheConfig:
    """``LAKEKEEPER__CACHE__<NAME>__{ENABLED,CAPACITY,TIME_TO_LIVE_SECS}``, Lakekeeper's caches and defaults."""

    # warehouses by id and name (loadTable and commits re-check the warehouse version)
    warehouse: CacheEntryConfig = CacheEntryConfig()
    # namespaces by id and name
    namespace: CacheEntryConfig = CacheEntryConfig()
    # storage credentials of warehouses, decrypted
    secrets: CacheEntryConfig = CacheEntryConfig(capacity=500, time_to_live_secs=600)
    # vended short-term storage credentials (the storage plugins)
    stc: CacheEntryConfig = CacheEntryConfig(capacity=10000, time_to_live_secs=3600)
    # loadTable/loadView lookups, kept until the change feed reports a change (no TTL; PostgreSQL)
    tabular: CacheEntryConfig = CacheEntryConfig(capacity=10000, time_to_live_secs=0)
    # roles by id (x-assume-role resolves through it)
    role: CacheEntryConfig = CacheEntryConfig(capacity=10000, time_to_live_secs=120)
    # the roles a user is a member of; its TTL must not exceed ROLE's (Lakekeeper asserts the same). Accepted
    # and checked for Lakekeeper's configurations: no request here reads a user's roles (OpenFGA resolves them)
    user_assignments: CacheEntryConfig = CacheEntryConfig(capacity=50000, time_to_live_secs=120)
    # the members of a role. Accepted for Lakekeeper's configurations: no request here reads role members
    # except the member listings, which read the database
    role_members: CacheEntryConfig = CacheEntryConfig(capacity=1000, time_to_live_secs=120)

    def __attrs_post_init__(self) -> None:
        if (self.user_assignments.enabled and self.role.enabled and self.role.time_to_live_secs
                and self.user_assignments.time_to_live_secs > self.role.time_to_live_secs):
            raise ValueError(
                "LAKEKEEPER__CACHE__USER_ASSIGNMENTS__TIME_TO_LIVE_SECS: must not exceed "
                f"LAKEKEEPER__CACHE__ROLE__TIME_TO_LIVE_SECS ({self.role.time_to_live_secs})"
            )


@frozen
class EventsConfig:
    """``LAKEKEEPER__EVENTS__*``: the in-process queue in front of every event sink."""

    # events held per sink while it is slow or down; beyond that new events are dropped
    # example: 100000
    queue_capacity: int = field(default=10000, validator=validators.ge(1))


@frozen
class UiConfig:
    """``LAKEKEEPER__UI__*`` (Lakekeeper §4.11): the web console at ``/ui``.

    Login is offered iff ``LAKEKEEPER__OPENID_PROVIDER_URI`` is set; ``openid_provider_uri``
    defaults to it. Paths are relative to ``/ui``. ``enable_surveys`` is accepted for
    compatibility (this console runs no surveys). ``session_secret`` is ours: the key of the
    console's session cookie (default: derived from ``PG_ENCRYPTION_KEY``, shared by all workers).
    """

    # serve the web console at /ui
    enabled: bool = True
    # the issuer the console signs users in with, as the browser reaches it (unset: OPENID_PROVIDER_URI)
    # example: https://idp.example.com/realms/lakekeeper
    openid_provider_uri: str | None = None
    # the console's OAuth2 client id at the identity provider (a public client, PKCE)
    # example: lakekeeper-console
    openid_client_id: str = "lakekeeper"
    # where the identity provider sends the browser back, below /ui
    # example: /callback
    openid_redirect_path: str = "/callback"
    # scopes the console asks for
    # example: openid profile email lakekeeper
    openid_scope: str = "openid profile email"
    # the OAuth2 resource indicator sent with the sign-in (Entra ID and others), unset: none
    # example: api://lakekeeper
    openid_resource: str | None = None
    # where the identity provider sends the browser after sign-out, below /ui
    # example: /logout
    openid_post_logout_redirect_path: str = "/logout"
    # a full URL instead of OPENID_POST_LOGOUT_REDIRECT_PATH (unset: the path below /ui)
    # example: https://lakekeeper.example.com/ui/logout
    openid_post_logout_redirect_url: str | None = None
    # sign out without asking the identity provider to redirect back
    openid_post_logout_redirect_disabled: bool = False
    # which token the console sends to the API: access_token or id_token
    openid_token_type: str = field(default="access_token", validator=validators.in_(("access_token", "id_token")))
    # the API URL the console calls, as the browser reaches it (unset: BASE_URI, else the request's host)
    # example: https://lakekeeper.example.com
    lakekeeper_url: str | None = None
    # accepted for compatibility with Lakekeeper's console (this console runs no surveys)
    enable_surveys: bool = True
    # key of the console's session cookie (unset: derived from PG_ENCRYPTION_KEY, the same in every worker)
    # example: 3f8a0c1e9b7d4a62b5c8e1f0a9d2c7b4
    session_secret: Secret | None = None


@frozen
class TrinoOpaConfig:
    """Trino's OPA access control answered by the catalog itself (docs/authorization.md, "Trino")."""

    # the key in the path of Trino's opa.policy.uri and opa.policy.batched-uri (Trino sends no
    # Authorization header to OPA); unset: the Trino policy endpoints answer 404
    # example: 5b0e1f0c8a9d4e3f9c2b7a6d1e0f4c3b
    key: Secret | None = None
    # Trino catalogs that are not named like their warehouse, as catalog=warehouse pairs (a catalog named
    # like a warehouse of the project maps to it without a pair)
    # example: lake=production,sandbox=dev
    catalogs: tuple[str, ...] = ()
    # the project the warehouses are looked up in (unset: the default project)
    # example: 8f4c7e36-3a57-4e2a-9a0f-3c2e54b0a1d2
    project_id: str | None = None
    # what a Trino user name is prefixed with to become a catalog user id (Trino's OAuth2 principal
    # field should be the token's subject)
    # example: kubernetes~
    user_prefix: str = "oidc~"
    # catalogs outside this catalog that every Trino user may use as they are (Trino's own `system`
    # catalog holds its metadata and built-in functions)
    # example: system,tpch
    open_catalogs: tuple[str, ...] = ("system",)


@frozen
class HostConfig:
    """General server configuration (Lakekeeper §4.1, §4.5, §4.9)."""

    # external URL used in self-links (unset: from the Host / X-Forwarded-* headers)
    # example: https://lakekeeper.example.com
    base_uri: str | None = None
    # address to listen on (API and metrics); unset: 127.0.0.1 for the embedded default (a laptop),
    # 0.0.0.0 (all interfaces) with PostgreSQL
    # example: 0.0.0.0
    bind_ip: str | None = None
    # where the catalog listens
    # example: 8080
    listen_port: int = field(default=8181, validator=PORT_NUMBER)
    # hypercorn worker processes (metrics are aggregated by the parent)
    # example: 4
    workers: int = 1
    # the event loop that serves requests: auto is uvloop when it is installed (the `fast` extra; 5-8%
    # less server CPU per loadTable, bench/RESULTS.md), else asyncio's own
    # example: asyncio
    event_loop: str = field(default="auto", validator=validators.in_(("auto", "uvloop", "asyncio")))
    # build self-links from the X-Forwarded-Host/Proto/Port/Prefix headers of a proxy (false: the Host header only)
    use_x_forwarded_headers: bool = True
    # requests without x-project-id use DEFAULT_PROJECT_ID
    enable_default_project: bool = True
    # the project of requests without x-project-id
    # example: 8f4c7e36-3a57-4e2a-9a0f-3c2e54b0a1d2
    default_project_id: str = NIL_UUID
    # extra reserved top-level namespaces (system, examples, information_schema always)
    # example: tmp,scratch
    reserved_namespaces: tuple[str, ...] = ()
    # CORS origins (* for any)
    # example: https://console.example.com
    allow_origin: tuple[str, ...] = ()
    # /swagger-ui with the OpenAPI documents of both APIs
    serve_swagger_ui: bool = True
    # page size of a list request that names none
    # example: 500
    pagination_size_default: int = field(default=100, validator=validators.ge(1))
    # largest page a list request gets, whatever it asks for
    # example: 5000
    pagination_size_max: int = field(default=1000, validator=validators.ge(1))
    # bytes (32 MiB); a larger body gets 413 RequestEntityTooLarge before it is read
    # example: 67108864
    max_request_body_size: int = field(default=33554432, validator=validators.ge(1))
    # a request (receiving its body included: a slow client) taking longer gets 408 RequestTimeout
    # example: 60s
    max_request_time: timedelta = timedelta(seconds=30)
    # an idle keep-alive connection, or one whose request headers are not complete, is closed after this
    # (keep it above a load balancer's idle timeout)
    # example: 120s
    http_keep_alive_timeout: timedelta = timedelta(seconds=75)
    # read-only: writes answer 503
    maintenance_mode: str = field(default="off", validator=validators.in_(("off", "read-only")))
    # skip the storage probes on warehouse creation
    skip_storage_validation: bool = False
    # storage endpoints warehouses may use (comma-separated or JSON list of host, *.domain, host:port,
    # IP, [IPv6]:port and CIDR patterns); unset: any endpoint (docs/security.md, "Storage endpoints")
    # example: minio.internal:9000,10.0.0.0/8,*.amazonaws.com
    allowed_storage_endpoints: tuple[str, ...] = ()
    # refuse storage endpoints that are, or resolve to, link-local or cloud metadata addresses
    block_link_local_storage_endpoints: bool = True
    # system identities (Lakekeeper §4.2): reported by GET /management/v1/info; the storage plugins
    # read the same keys to allow `*-system-identity` credentials
    enable_aws_system_credentials: bool = False
    # allow Azure system identities (AZURE_* variables, managed identity) as warehouse credentials
    enable_azure_system_credentials: bool = False
    # allow GCP system identities (GOOGLE_APPLICATION_CREDENTIALS, metadata server) as warehouse credentials
    enable_gcp_system_credentials: bool = False
    # log every change event (the built-in `log` event sink)
    log_cloudevents: bool = False
    # secret store by name: postgres (the database, SQLite too) or a plugin's (kv2)
    # example: kv2
    secret_backend: str = "postgres"
    # authorizer by name: allowall (built in) or a plugin's (openfga)
    # example: openfga
    authz_backend: str = "allowall"
    # entry-point names not to load
    # example: events_kafka,storage_gcs
    disabled_plugins: tuple[str, ...] = ()
    # unknown LAKEKEEPER__ keys are errors instead of warnings
    strict_config: bool = False
    # production: refuse to start on the embedded SQLite when no PostgreSQL is configured
    require_postgres: bool = False
    # production: refuse to start without authentication (no OpenID provider, no Kubernetes tokens)
    require_authentication: bool = False
    # log every plugin hook call and its result (pluggy tracing, debug level)
    trace_plugins: bool = False
    # user ids (JSON list) allowed every control-plane action whatever the authorizer says; never data access
    # example: ["oidc~root"]
    instance_admins: tuple[str, ...] = ()
    # embedded default: where SQLite and the `demo` file warehouse live (relative: to the working directory)
    # example: /var/lib/lakekeeper
    data_dir: str = "lakekeeper-data"
    # embedded default: create project + `demo` warehouse on first start
    embedded_quickstart: bool = True
    # a task worker's sleep after finding no due task
    # example: 30s
    task_poll_interval: timedelta = timedelta(seconds=10)
    # workers per process expiring soft-deleted tables and views (Lakekeeper's alias: TASK_TABULAR_EXPIRATION_WORKERS)
    # example: 4
    task_soft_deletion_workers: int = 2
    # workers per process deleting the files of tables dropped with purge
    # example: 4
    task_tabular_purge_workers: int = 2
    # workers per process deleting old task logs
    # example: 1
    task_log_cleanup_workers: int = 2
    # seconds after which a task whose worker stopped sending heartbeats is picked up by another
    # example: 600
    task_max_seconds_since_last_heartbeat: int = 3600
    # the soft-deletion delay of warehouses created without a delete profile, in seconds (7 days)
    # example: 86400
    default_tabular_expiration_delay_seconds: int = 604800
    # Prometheus metrics
    metrics: MetricsConfig = MetricsConfig()
    # idempotency keys of the Iceberg REST API
    idempotency: IdempotencyConfig = IdempotencyConfig()
    # development switches
    debug: DebugConfig = DebugConfig()
    # in-process caches
    cache: CacheConfig = CacheConfig()
    # the event sinks' queue
    events: EventsConfig = EventsConfig()
    # the web console
    ui: UiConfig = UiConfig()
    # Trino's OPA protocol answered by the catalog (no OPA server needed)
    trino_opa: TrinoOpaConfig = TrinoOpaConfig()
    # json (one object per line, as Lakekeeper logs) or text
    # example: text
    log_format: str = "json"
    # debug, info, warning or error (unset: from RUST_LOG when that is set, else info)
    # example: debug
    log_level: str | None = None
    # Lakekeeper's log filter (`info`, `info,lakekeeper=debug`), also read from plain RUST_LOG as its compose files
    # set it: the default level and the `lakekeeper` target's level apply (trace = debug)
    # example: info,lakekeeper=debug
    rust_log: str | None = None
    # third-party loggers (name prefixes, e.g. botocore,urllib3) allowed below INFO when LOG_LEVEL is
    # debug; others stay at INFO: at debug level they log credentials (botocore: access key ids and
    # request signatures)
    # example: botocore,urllib3
    log_debug_libraries: tuple[str, ...] = ()

    @property
    def all_reserved_namespaces(self) -> frozenset[str]:
        return frozenset(n.lower() for n in (*DEFAULT_RESERVED_NAMESPACES, *self.reserved_namespaces))


@frozen
class PgConfig:
    """PostgreSQL connection (Lakekeeper's flat ``PG_*`` keys)."""

    # read pool (a replica); default: the write URL
    # example: postgresql://lakekeeper:secret@db-replica:5432/lakekeeper
    pg_database_url_read: Secret | None = None
    # PostgreSQL, postgresql://user:password@host:5432/db; unset: the embedded SQLite
    # example: postgresql://lakekeeper:secret@db:5432/lakekeeper
    pg_database_url_write: Secret | None = None
    # instead of the URLs: the read host (unset: PG_HOST_W)
    # example: db-replica
    pg_host_r: str | None = None
    # instead of the URLs: the write host (with PG_DATABASE, PG_USER, PG_PASSWORD, PG_PORT)
    # example: db
    pg_host_w: str | None = None
    # port of PG_HOST_W / PG_HOST_R
    # example: 6432
    pg_port: int = 5432
    # user for PG_HOST_W / PG_HOST_R (unset: postgres)
    # example: lakekeeper
    pg_user: str | None = None
    # password for PG_HOST_W / PG_HOST_R
    # example: secret
    pg_password: Secret | None = None
    # database name, required with PG_HOST_W
    # example: lakekeeper
    pg_database: str | None = None
    # a dedicated schema (search_path); migrate creates it
    # example: lakekeeper
    pg_schema: str | None = None
    # encrypts stored credentials (secret_backend postgres); set a long random key in production
    # example: 8d1f0c2a7b9e4f63a5d2c1b0e9f8a7d6
    pg_encryption_key: Secret = Secret(UNSAFE_ENCRYPTION_KEY)
    # connections of the read pool, per process
    # example: 20
    pg_read_pool_connections: int = 10
    # connections of the write pool, per process
    # example: 10
    pg_write_pool_connections: int = 5
    # seconds a request waits for a pooled connection before a 503
    # example: 10
    pg_acquire_timeout: int = 5
    # libpq's disable ... verify-full (or sslmode in the URL)
    # example: verify-full
    pg_ssl_mode: str | None = None
    # PEM file of the CA the server's certificate must chain to (needs PG_SSL_MODE require or verify-*)
    # example: /etc/ssl/certs/db-ca.pem
    pg_ssl_root_cert: str | None = None
    # log every SQL statement (without its values) with its duration, at info level (logger
    # lakekeeper_host.store.statements); PostgreSQL
    pg_enable_statement_logging: bool = False
    # run SELECT 1 on a pooled connection before handing it out; a dead one is replaced (PostgreSQL)
    pg_test_before_acquire: bool = False
    # seconds after which a pooled connection is closed and replaced when next handed out (unset: never; PostgreSQL)
    # example: 1800
    pg_connection_max_lifetime: int | None = field(default=None, validator=validators.optional(validators.ge(1)))
    # embedded: explicit SQLite file (default <DATA_DIR>/catalog.sqlite)
    # example: /var/lib/lakekeeper/catalog.sqlite
    sqlite_path: str | None = None

    @property
    def uses_postgres(self) -> bool:
        return bool(self.pg_database_url_write or self.pg_database_url_read or self.pg_host_w)

    @property
    def encryption_key_is_default(self) -> bool:
        return self.pg_encryption_key.get() == UNSAFE_ENCRYPTION_KEY


@frozen
class OpenIdProviderConfig:
    # the issuer URL (its /.well-known/openid-configuration is fetched)
    # example: https://login.example.com/realms/partners
    uri: str
    # accepted aud values, any of them (unset: the audience is not checked)
    # example: lakekeeper
    audience: tuple[str, ...] = ()
    # further accepted iss values (the issuer as another network sees it)
    # example: http://localhost:30080/realms/partners
    additional_issuers: tuple[str, ...] = ()
    # a scope every token must carry (unset: none)
    # example: lakekeeper
    scope: str | None = None
    # claims tried in order for the user id <provider>~<claim value>
    # example: sub
    subject_claims: tuple[str, ...] = ("oid", "sub")
    # dotted path of a claim with the caller's roles (unset: none)
    # example: realm_access.roles
    roles_claim: str | None = None
    # display name of a token without name claims, `{claim}` placeholders (unset: "Nameless App with ID ...")
    # example: Service Account {client_id}
    display_name_template: str | None = None
    # refuse to start while the provider is unreachable (false: keep trying in the background)
    require_connected_on_startup: bool = True


@frozen
class RoleConfig:
    """``LAKEKEEPER__ROLE__*`` (Lakekeeper §4.8): limits of the role-in-role membership graph."""

    # longest chain of roles inside roles; a membership making it longer is a 409
    # example: 5
    max_nesting_depth: int = field(default=10, validator=validators.ge(1))


@frozen
class AuthConfig:
    """Authentication (Lakekeeper §4.7)."""

    # OIDC issuer URL: turns authentication on (user ids oidc~<subject>)
    # example: https://idp.example.com/realms/lakekeeper
    openid_provider_uri: str | None = None
    # accepted aud values of tokens, any of them (unset: the audience is not checked)
    # example: lakekeeper
    openid_audience: tuple[str, ...] = ()
    # further accepted iss values (the issuer as another network sees it)
    # example: http://localhost:30080/realms/lakekeeper
    openid_additional_issuers: tuple[str, ...] = ()
    # a scope every token must carry (unset: none)
    # example: lakekeeper
    openid_scope: str | None = None
    # claims tried in order for the user id oidc~<claim value>
    # example: sub
    openid_subject_claim: tuple[str, ...] = ("oid", "sub")
    # dotted path of a claim with the caller's roles (unset: none)
    # example: realm_access.roles
    openid_roles_claim: str | None = None
    # display name of a token without name claims, `{claim}` placeholders
    # example: Service Account {client_id}
    openid_display_name_template: str | None = None
    # further identity providers by name (user ids <name>~<subject>)
    openid_providers: dict[str, OpenIdProviderConfig] = field(factory=dict)
    # accept Kubernetes service-account tokens (checked with the TokenReview API; user ids kubernetes~<uid>)
    enable_kubernetes_authentication: bool = False
    # audiences a Kubernetes token must have (unset: the API server's default)
    # example: https://kubernetes.default.svc
    kubernetes_authentication_audience: tuple[str, ...] = ()
    # also accept legacy (non-projected) service-account tokens
    kubernetes_authentication_accept_legacy_serviceaccount: bool = False
    # the user id of a Kubernetes token: uid, or username (system:serviceaccount:<ns>:<name>)
    # example: username
    kubernetes_authentication_subject_source: str = "uid"
    # where the TokenReview API lives (in-cluster default)
    # example: https://10.0.0.1:443
    kubernetes_api_url: str = "https://kubernetes.default.svc"
    # the server's own service-account token for calling TokenReview (in-cluster default)
    # example: /run/secrets/token
    kubernetes_token_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    # CA bundle for an https TokenReview endpoint (in-cluster default; ignored when absent)
    # example: /etc/ssl/certs/k8s-ca.crt
    kubernetes_ca_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
    # LAKEKEEPER__ROLE__MAX_NESTING_DEPTH (read here so the key is known to the config)
    role: RoleConfig = RoleConfig()

    @property
    def enabled(self) -> bool:
        return bool(
            self.openid_provider_uri or self.openid_providers or self.enable_kubernetes_authentication
        )
