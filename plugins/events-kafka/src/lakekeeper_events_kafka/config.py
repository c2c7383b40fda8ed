"""``LAKEKEEPER__KAFKA_*``: a librdkafka-style dictionary mapped onto aiokafka's producer arguments.

Lakekeeper hands ``KAFKA_CONFIG`` to librdkafka verbatim. aiokafka takes keyword arguments
instead, so the keys this plugin understands are translated (``bootstrap.servers`` ->
``bootstrap_servers``, ``sasl.password`` -> ``sasl_plain_password``, the ``ssl.*`` files -> an
``ssl.SSLContext``...). An unknown ``security.``/``sasl.``/``ssl.`` key is a startup error (silently
ignoring one could mean sending events unencrypted); other unknown keys are tuning knobs of
librdkafka and are ignored with a warning.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import field, frozen

from lakekeeper_host.registry import StartupError

log = logging.getLogger(__name__)

# Lakekeeper redacts exactly these (config.rs); we never log or repr their values.
SECRET_KEYS = frozenset(
    {"sasl.password", "sasl.oauthbearer.client.secret", "ssl.key.password", "ssl.keystore.password"}
)
REDACTED = "**********"

DEFAULT_DELIVERY_TIMEOUT_MS = 10_000
# aiokafka gives up on (expires) a batch after request_timeout_ms; keep it near the delivery timeout
DEFAULT_REQUEST_TIMEOUT_MS = 10_000


@frozen
class KafkaConfig:
    """``KAFKA_TOPIC``, ``KAFKA_CONFIG`` (dict or its text) and ``KAFKA_CONFIG_FILE`` (a path)."""

    # the topic change events are published to; with KAFKA_CONFIG or KAFKA_CONFIG_FILE it turns the sink on
    # example: lakekeeper-changes
    kafka_topic: str | None = None
    # librdkafka settings, a JSON object or Lakekeeper's {key="value",...} form (never printed: it may hold
    # sasl.password and friends)
    # example: {"bootstrap.servers"="kafka:9092", "security.protocol"="SASL_SSL"}
    kafka_config: Any = field(default=None, repr=False)
    # a file with the KAFKA_CONFIG dictionary (KAFKA_CONFIG wins when both are set)
    # example: /etc/lakekeeper/kafka.conf
    kafka_config_file: str | None = None

    def librdkafka(self) -> dict[str, str] | None:
        """The configured dictionary (``KAFKA_CONFIG`` wins over ``KAFKA_CONFIG_FILE``), or None."""
        if self.kafka_config not in (None, ""):
            return parse_librdkafka(self.kafka_config, "LAKEKEEPER__KAFKA_CONFIG")
        if self.kafka_config_file:
            path = Path(self.kafka_config_file)
            try:
                text = path.read_text()
            except OSError as exc:
                raise StartupError(f"LAKEKEEPER__KAFKA_CONFIG_FILE: cannot read {str(path)!r}: {exc}") from None
            return parse_librdkafka(text, "LAKEKEEPER__KAFKA_CONFIG_FILE")
        return None


def redacted(conf: Mapping[str, str]) -> dict[str, str]:
    return {k: (REDACTED if k in SECRET_KEYS else v) for k, v in conf.items()}


# ---------------------------------------------------------------- parsing the dictionary


def parse_librdkafka(value: Any, setting: str) -> dict[str, str]:
    """A dict, JSON object text, or Lakekeeper's figment form ``{"bootstrap.servers"="h:9092",...}``."""
    if isinstance(value, Mapping):
        return {str(k).strip(): _scalar_text(v) for k, v in value.items()}
    text = str(value).strip()
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError:
        try:
            return _parse_figment_dict(text)
        except ValueError as exc:
            # the message names the position, never the (possibly secret) value
            raise StartupError(f"{setting}: not a JSON object or {{key=value,...}} dictionary: {exc}") from None
    if not isinstance(parsed, dict):
        raise StartupError(f"{setting}: expected an object of librdkafka settings")
    return {str(k).strip(): _scalar_text(v) for k, v in parsed.items()}


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse_figment_dict(text: str) -> dict[str, str]:
    """``{key=value, "quoted.key"="value, with comma"}``; quotes may be single or double."""
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError("missing surrounding braces")
    body, pos, out = text[1:-1], 0, {}

    def skip_space(i: int) -> int:
        while i < len(body) and body[i].isspace():
            i += 1
        return i

    def token(i: int, stops: str) -> tuple[str, int]:
        i = skip_space(i)
        if i < len(body) and body[i] in "\"'":
            quote, i, chars = body[i], i + 1, []
            while i < len(body) and body[i] != quote:
                if body[i] == "\\" and i + 1 < len(body):
                    i += 1
                chars.append(body[i])
                i += 1
            if i >= len(body):
                raise ValueError(f"unterminated quote at offset {i}")
            return "".join(chars), skip_space(i + 1)
        start = i
        while i < len(body) and body[i] not in stops:
            i += 1
        return body[start:i].strip(), i

    while True:
        pos = skip_space(pos)
        if pos >= len(body):
            return out
        key, pos = token(pos, "=,")
        if pos >= len(body) or body[pos] not in "=:":
            raise ValueError(f"expected '=' after key {key!r}")
        value, pos = token(pos + 1, ",")
        if not key:
            raise ValueError(f"empty key at offset {pos}")
        out[key] = value
        pos = skip_space(pos)
        if pos < len(body):
            if body[pos] != ",":
                raise ValueError(f"expected ',' at offset {pos}")
            pos += 1


# ---------------------------------------------------------------- librdkafka -> aiokafka


def _bool(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in ("true", "1", "yes", "on"):
        return True
    if lowered in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {value!r}")


def _acks(value: str) -> int | str:
    lowered = value.strip().lower()
    return "all" if lowered in ("all", "-1") else int(lowered)


def _compression(value: str) -> str | None:
    lowered = value.strip().lower()
    return None if lowered in ("none", "") else lowered


def _upper(value: str) -> str:
    return value.strip().upper()


def _servers(value: str) -> list[str]:
    return [s.strip() for s in value.split(",") if s.strip()]


_DIRECT: dict[str, tuple[str, Any]] = {
    "bootstrap.servers": ("bootstrap_servers", _servers),
    "metadata.broker.list": ("bootstrap_servers", _servers),
    "client.id": ("client_id", str),
    "acks": ("acks", _acks),
    "request.required.acks": ("acks", _acks),
    "compression.type": ("compression_type", _compression),
    "compression.codec": ("compression_type", _compression),
    "linger.ms": ("linger_ms", int),
    "queue.buffering.max.ms": ("linger_ms", int),
    "batch.size": ("max_batch_size", int),
    "message.max.bytes": ("max_request_size", int),
    "request.timeout.ms": ("request_timeout_ms", int),
    "retry.backoff.ms": ("retry_backoff_ms", int),
    "metadata.max.age.ms": ("metadata_max_age_ms", int),
    "topic.metadata.refresh.interval.ms": ("metadata_max_age_ms", int),
    "connections.max.idle.ms": ("connections_max_idle_ms", int),
    "security.protocol": ("security_protocol", _upper),
    "sasl.mechanism": ("sasl_mechanism", _upper),
    "sasl.mechanisms": ("sasl_mechanism", _upper),
    "sasl.username": ("sasl_plain_username", str),
    "sasl.password": ("sasl_plain_password", str),
    "sasl.kerberos.service.name": ("sasl_kerberos_service_name", str),
    # off by default (aiokafka's default too): Tansu and some other brokers reject it
    "enable.idempotence": ("enable_idempotence", _bool),
}
_SSL_KEYS = frozenset(
    {
        "ssl.ca.location",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "enable.ssl.certificate.verification",
        "ssl.endpoint.identification.algorithm",
    }
)
_OAUTH_KEYS = frozenset(
    {
        "sasl.oauthbearer.method",
        "sasl.oauthbearer.client.id",
        "sasl.oauthbearer.client.secret",
        "sasl.oauthbearer.token.endpoint.url",
        "sasl.oauthbearer.scope",
    }
)
_DELIVERY_TIMEOUT_KEYS = ("delivery.timeout.ms", "message.timeout.ms")
_SECURITY_PREFIXES = ("security.", "sasl.", "ssl.", "enable.ssl.")


@frozen
class ProducerSettings:
    """What the sink needs: aiokafka keyword arguments and the per-event delivery timeout."""

    kwargs: dict[str, Any] = field(repr=False)
    delivery_timeout: float
    redacted_conf: dict[str, str]
    ignored: tuple[str, ...] = ()

    @property
    def bootstrap_servers(self) -> list[str]:
        return list(self.kwargs.get("bootstrap_servers", []))


def producer_settings(conf: Mapping[str, str]) -> ProducerSettings:
    """Translate a librdkafka dictionary; raises StartupError naming the offending key."""
    kwargs: dict[str, Any] = {"request_timeout_ms": DEFAULT_REQUEST_TIMEOUT_MS}
    ignored: list[str] = []
    unsupported: list[str] = []
    for key, raw in conf.items():
        if key in _DIRECT:
            name, convert = _DIRECT[key]
            try:
                kwargs[name] = convert(raw)
            except ValueError:
                shown = REDACTED if key in SECRET_KEYS else raw
                raise StartupError(f"LAKEKEEPER__KAFKA_CONFIG: invalid value {shown!r} for {key!r}") from None
        elif key in _SSL_KEYS or key in _OAUTH_KEYS or key in _DELIVERY_TIMEOUT_KEYS:
            continue  # handled below
        elif key.startswith(_SECURITY_PREFIXES):
            unsupported.append(key)
        else:
            ignored.append(key)
    if unsupported:
        raise StartupError(
            "LAKEKEEPER__KAFKA_CONFIG: unsupported security setting(s) "
            f"{', '.join(sorted(unsupported))} (the aiokafka producer understands "
            f"{', '.join(sorted(k for k in (*_DIRECT, *_SSL_KEYS, *_OAUTH_KEYS) if k.startswith(_SECURITY_PREFIXES)))})"
        )
    if not kwargs.get("bootstrap_servers"):
        raise StartupError("LAKEKEEPER__KAFKA_CONFIG: needs bootstrap.servers (or metadata.broker.list)")

    protocol = kwargs.get("security_protocol", "PLAINTEXT")
    if protocol not in ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise StartupError(f"LAKEKEEPER__KAFKA_CONFIG: unknown security.protocol {protocol!r}")
    if protocol in ("SSL", "SASL_SSL"):
        kwargs["ssl_context"] = _ssl_context(conf)
    elif any(k in conf for k in _SSL_KEYS):
        raise StartupError(
            f"LAKEKEEPER__KAFKA_CONFIG: ssl.* settings need security.protocol SSL or SASL_SSL, not {protocol}"
        )

    if protocol.startswith("SASL_"):
        mechanism = kwargs.setdefault("sasl_mechanism", "PLAIN")
        if mechanism == "OAUTHBEARER":
            kwargs["sasl_oauth_token_provider"] = _token_provider(conf)
        elif mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            if not (kwargs.get("sasl_plain_username") and kwargs.get("sasl_plain_password")):
                raise StartupError(f"LAKEKEEPER__KAFKA_CONFIG: SASL {mechanism} needs sasl.username and sasl.password")
        elif mechanism != "GSSAPI":
            raise StartupError(f"LAKEKEEPER__KAFKA_CONFIG: unsupported sasl.mechanism {mechanism!r}")

    delivery_ms = DEFAULT_DELIVERY_TIMEOUT_MS
    for key in _DELIVERY_TIMEOUT_KEYS:
        if key in conf:
            try:
                delivery_ms = int(conf[key])
            except ValueError:
                raise StartupError(f"LAKEKEEPER__KAFKA_CONFIG: {key} must be an integer") from None
    if ignored:
        log.warning(
            "Kafka event sink ignores librdkafka setting(s) aiokafka has no equivalent for: %s",
            ", ".join(sorted(ignored)),
        )
    return ProducerSettings(
        kwargs=kwargs,
        delivery_timeout=delivery_ms / 1000,
        redacted_conf=redacted(conf),
        ignored=tuple(sorted(ignored)),
    )


def _ssl_context(conf: Mapping[str, str]) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=conf.get("ssl.ca.location") or None)
        if conf.get("ssl.certificate.location"):
            context.load_cert_chain(
                conf["ssl.certificate.location"],
                conf.get("ssl.key.location") or None,
                conf.get("ssl.key.password") or None,
            )
    except (OSError, ssl.SSLError) as exc:
        raise StartupError(f"LAKEKEEPER__KAFKA_CONFIG: cannot load the ssl.* files: {exc}") from None
    if conf.get("ssl.endpoint.identification.algorithm", "https").strip().lower() == "none":
        context.check_hostname = False
    if not _bool(conf.get("enable.ssl.certificate.verification", "true")):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def _token_provider(conf: Mapping[str, str]) -> Any:
    from lakekeeper_events_kafka.oauth import ClientCredentialsTokenProvider

    method = conf.get("sasl.oauthbearer.method", "default").strip().lower()
    if method != "oidc":
        raise StartupError("LAKEKEEPER__KAFKA_CONFIG: SASL OAUTHBEARER needs sasl.oauthbearer.method=oidc")
    missing = [
        k
        for k in ("sasl.oauthbearer.client.id", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.token.endpoint.url")
        if not conf.get(k)
    ]
    if missing:
        raise StartupError(f"LAKEKEEPER__KAFKA_CONFIG: SASL OAUTHBEARER needs {', '.join(missing)}")
    return ClientCredentialsTokenProvider(
        token_url=conf["sasl.oauthbearer.token.endpoint.url"],
        client_id=conf["sasl.oauthbearer.client.id"],
        client_secret=conf["sasl.oauthbearer.client.secret"],
        scope=conf.get("sasl.oauthbearer.scope") or None,
    )
