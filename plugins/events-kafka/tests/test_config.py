"""KAFKA_CONFIG: librdkafka dictionaries in every accepted spelling, mapped to aiokafka, secrets hidden."""

from __future__ import annotations

import logging
import ssl

import pytest

from lakekeeper_events_kafka import (
    KafkaConfig,
    KafkaSink,
    build_kafka_sink,
    parse_librdkafka,
    producer_settings,
)
from lakekeeper_host.config.load import structure_section
from lakekeeper_host.registry import StartupError


def test_lakekeeper_figment_form_with_commas_inside_quotes():
    text = '{"bootstrap.servers"="h1:9092,h2:9092", "security.protocol"="SASL_SSL", sasl.mechanisms=PLAIN}'
    assert parse_librdkafka(text, "X") == {
        "bootstrap.servers": "h1:9092,h2:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "PLAIN",
    }


def test_json_and_dict_forms():
    assert parse_librdkafka('{"bootstrap.servers": "h:1", "linger.ms": 5}', "X") == {
        "bootstrap.servers": "h:1",
        "linger.ms": "5",
    }
    assert parse_librdkafka({"enable.idempotence": False}, "X") == {"enable.idempotence": "false"}


def test_malformed_config_names_the_setting_not_the_value():
    with pytest.raises(StartupError, match="LAKEKEEPER__KAFKA_CONFIG") as info:
        parse_librdkafka('{"sasl.password"="hunter2', "LAKEKEEPER__KAFKA_CONFIG")
    assert "hunter2" not in str(info.value)


def test_mapping_to_aiokafka_arguments():
    settings = producer_settings(
        {
            "bootstrap.servers": "h1:9092, h2:9092",
            "client.id": "lk",
            "acks": "all",
            "compression.type": "gzip",
            "linger.ms": "5",
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "svc",
            "sasl.password": "hunter2",
            "message.timeout.ms": "2500",
            "queue.buffering.max.messages": "1000",  # no aiokafka equivalent: ignored
        }
    )
    kw = settings.kwargs
    assert kw["bootstrap_servers"] == ["h1:9092", "h2:9092"]
    assert kw["client_id"] == "lk" and kw["acks"] == "all" and kw["compression_type"] == "gzip"
    assert kw["linger_ms"] == 5
    assert kw["security_protocol"] == "SASL_PLAINTEXT" and kw["sasl_mechanism"] == "SCRAM-SHA-512"
    assert kw["sasl_plain_username"] == "svc" and kw["sasl_plain_password"] == "hunter2"
    assert "enable_idempotence" not in kw  # aiokafka's default (off): Tansu rejects idempotence
    assert settings.delivery_timeout == 2.5
    assert settings.ignored == ("queue.buffering.max.messages",)
    assert settings.redacted_conf["sasl.password"] == "**********"


def test_secrets_never_in_repr_or_logs(caplog):
    conf = {
        "bootstrap.servers": "h:1",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.username": "u",
        "sasl.password": "hunter2",
    }
    config = KafkaConfig(kafka_topic="t", kafka_config=conf)
    assert "hunter2" not in repr(config)
    sink = KafkaSink("t", producer_settings(conf))
    assert "hunter2" not in repr(sink) and "h:1" in repr(sink)
    with caplog.at_level(logging.DEBUG), pytest.raises(StartupError) as info:
        producer_settings({**conf, "sasl.password": "hunter2", "acks": "bogus"})
    assert "hunter2" not in str(info.value) and "hunter2" not in caplog.text


def test_ssl_settings_build_a_context(tmp_path):
    settings = producer_settings(
        {"bootstrap.servers": "h:1", "security.protocol": "SSL", "enable.ssl.certificate.verification": "false"}
    )
    context = settings.kwargs["ssl_context"]
    assert isinstance(context, ssl.SSLContext) and context.verify_mode == ssl.CERT_NONE
    with pytest.raises(StartupError, match="cannot load"):
        producer_settings(
            {"bootstrap.servers": "h:1", "security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "nope.pem")}
        )


@pytest.mark.parametrize(
    "conf, message",
    [
        ({"security.protocol": "SSL"}, "needs bootstrap.servers"),
        ({"bootstrap.servers": "h:1", "ssl.keystore.location": "/k.p12"}, "unsupported security setting"),
        ({"bootstrap.servers": "h:1", "ssl.ca.location": "/ca.pem"}, "need security.protocol SSL"),
        (
            {"bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.username": "u"},
            "needs sasl.username and sasl.password",
        ),
        ({"bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}, "method=oidc"),
        ({"bootstrap.servers": "h:1", "security.protocol": "TLS"}, "unknown security.protocol"),
    ],
)
def test_invalid_configurations_fail_at_startup(conf, message):
    with pytest.raises(StartupError, match=message):
        producer_settings(conf)


def test_oauthbearer_client_credentials():
    settings = producer_settings(
        {
            "bootstrap.servers": "h:1",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "OAUTHBEARER",
            "sasl.oauthbearer.method": "oidc",
            "sasl.oauthbearer.client.id": "lk",
            "sasl.oauthbearer.client.secret": "very-secret",
            "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
        }
    )
    provider = settings.kwargs["sasl_oauth_token_provider"]
    assert "very-secret" not in repr(provider)


def test_config_from_environment_and_file(tmp_path):
    raw = {"kafka_topic": "events", "kafka_config": '{"bootstrap.servers"="h:9092"}'}
    config = structure_section(raw, KafkaConfig)
    assert config.librdkafka() == {"bootstrap.servers": "h:9092"}

    path = tmp_path / "kafka.json"
    path.write_text('{"bootstrap.servers": "f:9092"}')
    from_file = structure_section({"kafka_topic": "events", "kafka_config_file": str(path)}, KafkaConfig)
    assert from_file.librdkafka() == {"bootstrap.servers": "f:9092"}
    # KAFKA_CONFIG wins over KAFKA_CONFIG_FILE, as in Lakekeeper
    both = structure_section({**raw, "kafka_config_file": str(path)}, KafkaConfig)
    assert both.librdkafka() == {"bootstrap.servers": "h:9092"}


async def test_not_configured_means_no_sink():
    assert await build_kafka_sink(KafkaConfig(), None) is None
    assert await build_kafka_sink(KafkaConfig(kafka_topic="  "), None) is None
    assert await build_kafka_sink(KafkaConfig(kafka_config={"bootstrap.servers": "h:1"}), None) is None
