"""Configuration: env + file, Lakekeeper names and defaults, typed errors, redaction."""

from __future__ import annotations

from datetime import timedelta

import pytest

from lakekeeper_host.config import ConfigError, Secret, load_settings
from lakekeeper_host.config.types import format_duration, parse_duration


def test_lakekeeper_defaults():
    settings = load_settings({})
    host = settings.host
    assert host.listen_port == 8181
    assert host.pagination_size_default == 100 and host.pagination_size_max == 1000
    assert host.max_request_body_size == 33554432
    assert host.max_request_time == timedelta(seconds=30)
    assert host.authz_backend == "allowall" and host.secret_backend == "postgres"
    assert host.enable_default_project is True
    assert host.default_project_id == "00000000-0000-0000-0000-000000000000"
    assert host.metrics.port == 9000
    assert settings.pg.pg_read_pool_connections == 10 and settings.pg.pg_write_pool_connections == 5
    assert settings.embedded and settings.bind_ip == "127.0.0.1"


def test_env_nesting_and_types():
    settings = load_settings(
        {
            "LAKEKEEPER__LISTEN_PORT": "9999",
            "LAKEKEEPER__METRICS__PORT": "9100",
            "LAKEKEEPER__IDEMPOTENCY__LIFETIME": "PT10M",
            "LAKEKEEPER__ALLOW_ORIGIN": "http://a, http://b",
            "LAKEKEEPER__RESERVED_NAMESPACES": '["tmp", "scratch"]',
            "LAKEKEEPER__SKIP_STORAGE_VALIDATION": "TRUE",
            "LAKEKEEPER__OPENID_PROVIDERS__OKTA__URI": "https://okta.example",
            "LAKEKEEPER__OPENID_PROVIDERS__OKTA__AUDIENCE": "a,b",
        }
    )
    assert settings.host.listen_port == 9999
    assert settings.host.metrics.port == 9100
    assert settings.host.idempotency.lifetime == timedelta(minutes=10)
    assert settings.host.allow_origin == ("http://a", "http://b")
    assert settings.host.all_reserved_namespaces >= {"system", "tmp", "scratch"}
    assert settings.host.skip_storage_validation is True
    assert settings.auth.openid_providers["okta"].audience == ("a", "b")


def test_legacy_prefix_is_read_and_lakekeeper_prefix_wins():
    settings = load_settings({"ICEBERG_REST__LISTEN_PORT": "1111", "ICEBERG_REST__BASE_URI": "http://old"})
    assert settings.host.listen_port == 1111 and settings.host.base_uri == "http://old"
    settings = load_settings({"ICEBERG_REST__LISTEN_PORT": "1111", "LAKEKEEPER__LISTEN_PORT": "2222"})
    assert settings.host.listen_port == 2222


def test_file_then_env_override(tmp_path):
    config = tmp_path / "lk.toml"
    config.write_text('listen_port = 7000\nbase_uri = "http://from-file"\n[metrics]\nport = 9300\n')
    settings = load_settings({"LAKEKEEPER__LISTEN_PORT": "7001"}, config_file=config)
    assert settings.host.listen_port == 7001
    assert settings.host.base_uri == "http://from-file"
    assert settings.host.metrics.port == 9300
    via_env = load_settings({"LAKEKEEPER__CONFIG_FILE": str(config)})
    assert via_env.host.listen_port == 7000


@pytest.mark.parametrize(
    "environ, variable",
    [
        ({"LAKEKEEPER__LISTEN_PORT": "eighty"}, "LAKEKEEPER__LISTEN_PORT"),
        ({"LAKEKEEPER__METRICS__PORT": "x"}, "LAKEKEEPER__METRICS__PORT"),
        ({"LAKEKEEPER__SKIP_STORAGE_VALIDATION": "maybe"}, "LAKEKEEPER__SKIP_STORAGE_VALIDATION"),
        ({"LAKEKEEPER__MAX_REQUEST_TIME": "soon"}, "LAKEKEEPER__MAX_REQUEST_TIME"),
        ({"LAKEKEEPER__MAINTENANCE_MODE": "sometimes"}, "LAKEKEEPER__MAINTENANCE_MODE"),
    ],
)
def test_bad_values_name_the_variable(environ, variable):
    with pytest.raises(ConfigError) as info:
        load_settings(environ)
    assert variable in str(info.value)


def test_key_that_is_both_value_and_section_is_an_error():
    with pytest.raises(ConfigError, match="LAKEKEEPER__METRICS"):
        load_settings({"LAKEKEEPER__METRICS": "1", "LAKEKEEPER__METRICS__PORT": "2"})


def test_unknown_keys_warn_or_fail_under_strict(caplog):
    settings = load_settings({"LAKEKEEPER__LISTEN_PROT": "1"})
    assert settings.unknown_keys() == ["LAKEKEEPER__LISTEN_PROT"]
    settings.report_unknown()
    assert "Unknown config key LAKEKEEPER__LISTEN_PROT (did you mean LAKEKEEPER__LISTEN_PORT?)" in caplog.text
    strict = load_settings({"LAKEKEEPER__LISTEN_PROT": "1", "LAKEKEEPER__STRICT_CONFIG": "true"})
    with pytest.raises(ConfigError, match="LAKEKEEPER__LISTEN_PROT"):
        strict.report_unknown()


def test_secrets_are_redacted_everywhere(tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("from-a-file-secret\n")
    settings = load_settings(
        {
            "LAKEKEEPER__PG_PASSWORD": "hunter2-super-secret",
            "LAKEKEEPER__PG_ENCRYPTION_KEY_FILE": str(key_file),
            "LAKEKEEPER__PG_DATABASE_URL_WRITE": "postgresql://u:pw-in-url@h/db",
        }
    )
    assert settings.pg.pg_password.get() == "hunter2-super-secret"
    assert settings.pg.pg_encryption_key.get() == "from-a-file-secret"
    text = repr(settings.pg) + str(settings.pg) + repr(settings)
    for secret in ("hunter2-super-secret", "from-a-file-secret", "pw-in-url"):
        assert secret not in text
    assert repr(Secret("x")) == "Secret('**********')"


def test_durations():
    assert parse_duration("PT30M") == timedelta(minutes=30)
    assert parse_duration("P1DT2H") == timedelta(days=1, hours=2)
    assert parse_duration("500ms") == timedelta(milliseconds=500)
    assert parse_duration("30s") == timedelta(seconds=30)
    assert parse_duration(5) == timedelta(seconds=5)
    assert format_duration(timedelta(minutes=30)) == "PT30M"
    assert format_duration(timedelta(hours=1, seconds=5)) == "PT1H5S"
    with pytest.raises(ValueError):
        parse_duration("PT")


@pytest.mark.parametrize("name", ["dev", "ci", "production"])
def test_shipped_config_examples_load_strictly(name):
    """config/<env>.toml, as `lakekeeper --config config/<env>.toml serve` reads them."""
    from pathlib import Path

    path = Path(__file__).parents[2] / "config" / f"{name}.toml"
    environ = {"LAKEKEEPER__STRICT_CONFIG": "true"}
    if name == "production":  # its secrets come from the environment, as the file says
        environ["LAKEKEEPER__PG_DATABASE_URL_WRITE"] = "postgresql://lakekeeper@db.example:5432/catalog"
        environ["LAKEKEEPER__PG_ENCRYPTION_KEY"] = "a-long-random-production-key-0123456789"
        environ["LAKEKEEPER__OPENID_PROVIDER_URI"] = "https://idp.example/realms/lakekeeper"  # it requires one
    settings = load_settings(environ, config_file=path)
    assert settings.host.listen_port == 8181
    if name == "production":
        assert settings.host.workers == 2 and settings.host.metrics.port == 9000


def test_default_bind_address(tmp_path):
    embedded = load_settings({"LAKEKEEPER__DATA_DIR": str(tmp_path)})
    assert embedded.bind_ip == "127.0.0.1"
    assert embedded.host.http_keep_alive_timeout == timedelta(seconds=75)
    with_postgres = load_settings({"LAKEKEEPER__PG_DATABASE_URL_WRITE": "postgresql://u@db/x"})
    assert with_postgres.bind_ip == "0.0.0.0"
    explicit = load_settings({"LAKEKEEPER__BIND_IP": "10.1.2.3", "LAKEKEEPER__PG_DATABASE_URL_WRITE": "postgresql://u@db/x"})
    assert explicit.bind_ip == "10.1.2.3"


# ---------------------------------------------------------------- Lakekeeper's names and meanings (issue 32)


def test_lakekeeper_keys_are_read_with_lakekeepers_meaning():
    """Keys Lakekeeper's docs, Helm chart and compose files use, accepted without a warning."""
    settings = load_settings(
        {
            "LAKEKEEPER__METRICS_PORT": "9100",  # Lakekeeper's flat spelling of METRICS__PORT
            "LAKEKEEPER__TASK_TABULAR_EXPIRATION_WORKERS": "3",
            "LAKEKEEPER__PG_ENABLE_STATEMENT_LOGGING": "true",
            "LAKEKEEPER__PG_TEST_BEFORE_ACQUIRE": "true",
            "LAKEKEEPER__PG_CONNECTION_MAX_LIFETIME": "1800",
            "LAKEKEEPER__CACHE__ROLE__CAPACITY": "5",
            "LAKEKEEPER__CACHE__USER_ASSIGNMENTS__ENABLED": "false",
            "LAKEKEEPER__CACHE__ROLE_MEMBERS__TIME_TO_LIVE_SECS": "30",
            "LAKEKEEPER__DEBUG__AUTO_SERVE": "true",
            "LAKEKEEPER__DEBUG__EXTENDED_LOGS": "true",
            "LAKEKEEPER__DEBUG__LOG_AUTHORIZATION_HEADER": "true",
            "ICEBERG_REST__DEFAULT_TABULAR_EXPIRATION_DELAY_SECONDS": '"2"',  # as Lakekeeper's test compose writes it
            "LAKEKEEPER__PLACEHOLDER": "placeholder",  # the Helm chart adds it to every pod
            "RUST_LOG": "info,lakekeeper=debug",
        }
    )
    host, pg = settings.host, settings.pg
    assert host.metrics.port == 9100 and host.task_soft_deletion_workers == 3
    assert pg.pg_enable_statement_logging and pg.pg_test_before_acquire and pg.pg_connection_max_lifetime == 1800
    assert host.cache.role.capacity == 5 and host.cache.role.time_to_live_secs == 120
    assert host.cache.user_assignments.enabled is False and host.cache.role_members.time_to_live_secs == 30
    assert host.debug.auto_serve and host.debug.extended_logs and host.debug.log_authorization_header
    assert host.default_tabular_expiration_delay_seconds == 2
    assert host.rust_log == "info,lakekeeper=debug"
    assert settings.config_problems() == []
    # the key itself wins over its alias
    both = load_settings({"LAKEKEEPER__METRICS_PORT": "9100", "LAKEKEEPER__METRICS__PORT": "9200"})
    assert both.host.metrics.port == 9200


def test_rust_log_sets_levels_and_log_level_wins():
    import logging

    from lakekeeper_host.runtime.logs import log_levels

    assert log_levels(load_settings({})) == (logging.INFO, {})
    root, targets = log_levels(load_settings({"RUST_LOG": "warn,lakekeeper=debug,sqlx=trace"}))
    assert root == logging.WARNING and targets == {"lakekeeper": logging.DEBUG, "lakekeeper_host": logging.DEBUG}
    assert log_levels(load_settings({"RUST_LOG": "trace"}))[0] == logging.DEBUG
    assert log_levels(load_settings({"RUST_LOG": "error", "LAKEKEEPER__LOG_LEVEL": "info"}))[0] == logging.INFO


def test_unknown_keys_inside_known_sections_are_reported_like_top_level_ones():
    settings = load_settings({
        "LAKEKEEPER__CACHE__ROLE__X": "1",
        "LAKEKEEPER__CACHE__ROLEE__ENABLED": "false",
        "LAKEKEEPER__DEBUG__AUTO_SERVER": "true",
        "LAKEKEEPER__OPENID_PROVIDERS__OKTA__URI": "https://okta.example",  # provider names are the operator's
        "LAKEKEEPER__OPENID_PROVIDERS__OKTA__AUDIENCEE": "x",
    })
    assert settings.config_problems() == [
        "Unknown config key LAKEKEEPER__CACHE__ROLEE (did you mean LAKEKEEPER__CACHE__ROLE?)",
        "Unknown config key LAKEKEEPER__CACHE__ROLE__X",
        "Unknown config key LAKEKEEPER__DEBUG__AUTO_SERVER (did you mean LAKEKEEPER__DEBUG__AUTO_SERVE?)",
        "Unknown config key LAKEKEEPER__OPENID_PROVIDERS__OKTA__AUDIENCEE "
        "(did you mean LAKEKEEPER__OPENID_PROVIDERS__OKTA__AUDIENCE?)",
    ]
    strict = load_settings({"LAKEKEEPER__CACHE__ROLE__X": "1", "LAKEKEEPER__STRICT_CONFIG": "true"})
    with pytest.raises(ConfigError, match="LAKEKEEPER__CACHE__ROLE__X"):
        strict.report_unknown()


def test_a_partial_section_keeps_the_defaults_of_its_parent():
    """CACHE__SECRETS keeps 500 entries for 600 s when only ENABLED is set (not the generic 1000 / 60)."""
    settings = load_settings({"LAKEKEEPER__CACHE__SECRETS__ENABLED": "false"})
    secrets = settings.host.cache.secrets
    assert (secrets.enabled, secrets.capacity, secrets.time_to_live_secs) == (False, 500, 600)


def test_user_assignments_may_not_outlive_roles():
    with pytest.raises(ConfigError) as info:
        load_settings({"LAKEKEEPER__CACHE__USER_ASSIGNMENTS__TIME_TO_LIVE_SECS": "600"})
    assert str(info.value) == ("LAKEKEEPER__CACHE__USER_ASSIGNMENTS__TIME_TO_LIVE_SECS: must not exceed "
                               "LAKEKEEPER__CACHE__ROLE__TIME_TO_LIVE_SECS (120)")


@pytest.mark.parametrize(
    "variable, meant",
    [
        ("LAKEKEEPER__PG_DATABSE_URL_WRITE", "LAKEKEEPER__PG_DATABASE_URL_WRITE"),
        ("LAKEKEEPER__PG_DATABASE_URL", "LAKEKEEPER__PG_DATABASE_URL_WRITE"),
        ("LAKEKEEPER__PG_HOST", "LAKEKEEPER__PG_HOST_W"),
    ],
)
def test_a_misspelled_database_variable_refuses_to_run_on_sqlite(variable, meant):
    environ = {variable: "postgresql://u:p@db:5432/x", "LAKEKEEPER__PG_ENCRYPTION_KEY": "k" * 32,
               "LAKEKEEPER__PG_READ_POOL_CONNECTIONS": "20"}
    with pytest.raises(ConfigError) as info:
        load_settings(environ)
    assert str(info.value).startswith(f"{variable} is not a variable this server reads (did you mean {meant}?)")
    assert "embedded SQLite" in str(info.value)
    # spelled right, it is a PostgreSQL deployment
    assert load_settings({**environ, meant: environ.pop(variable)}).pg.uses_postgres
