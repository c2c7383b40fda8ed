"""Process logging: JSON lines (the default, as Lakekeeper logs) or plain text, on stderr.

``LOG_LEVEL=debug`` is for this server's own loggers (``lakekeeper*``: the host and its plugins).
Third-party libraries stay at INFO unless ``LOG_DEBUG_LIBRARIES`` names them: at debug level
botocore logs every canonical request with the access key id and signature, urllib3/httpx the
URLs of presigned requests, azure and google SDKs request headers.
"""

from __future__ import annotations

import json
import logging
import sys
import time

from lakekeeper_host.config import Settings


class JsonFormatter(logging.Formatter):
    """One JSON object per line; ``extended`` (``LAKEKEEPER__DEBUG__EXTENDED_LOGS``) adds the source
    file and line, under Lakekeeper's names."""

    def __init__(self, extended: bool = False) -> None:
        super().__init__()
        self.extended = extended

    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "target": record.name,
            "message": record.getMessage(),
        }
        if self.extended:
            payload["filename"] = record.pathname
            payload["line_number"] = record.lineno
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload)


def setup_logging(settings: Settings | None) -> None:
    level, targets = log_levels(settings)
    handler = logging.StreamHandler(sys.stderr)
    if settings is None or settings.host.log_format == "json":
        handler.setFormatter(JsonFormatter(extended=settings is not None and settings.host.debug.extended_logs))
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in _OUR_LOGGERS:  # NOTSET: follow the root level (a previous RUST_LOG target level is undone)
        logging.getLogger(name).setLevel(targets.get(name, logging.NOTSET))
    allowed = tuple(settings.host.log_debug_libraries) if settings else ()
    handler.addFilter(ThirdPartyDebugFilter(allowed))
    for library in CHATTY_LIBRARIES:  # not even built: their debug records are costly as well as unsafe
        if not library.startswith(allowed):
            logging.getLogger(library).setLevel(logging.INFO)
    for noisy in ("hypercorn.access", "databases", "aiosqlite", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


# libraries known to log secrets or whole requests at debug level
CHATTY_LIBRARIES = ("botocore", "boto3", "s3transfer", "urllib3", "aiobotocore", "azure", "google", "httpx",
                    "httpcore", "aiohttp", "openfga_sdk", "hvac", "aiokafka", "kafka", "nats", "fsspec", "s3fs",
                    "requests", "pyiceberg", "hpack", "h11", "h2")
OWN_LOGGERS = ("lakekeeper", "__main__")


class ThirdPartyDebugFilter(logging.Filter):
    """Drops records below INFO from loggers that are not this server's own, unless allowed by name."""

    def __init__(self, allowed: tuple[str, ...]) -> None:
        super().__init__()
        self.allowed = allowed

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.INFO or record.name.startswith(OWN_LOGGERS + self.allowed)
# RUST_LOG's level names; Python has no trace level
_RUST_LEVELS = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING,
                "warning": logging.WARNING, "error": logging.ERROR, "off": logging.CRITICAL + 1}
# RUST_LOG targets that mean this server (Lakekeeper's crate names, old and new) -> our loggers
_OUR_TARGETS = ("lakekeeper", "lakekeeper_bin", "iceberg_catalog", "iceberg-catalog", "iceberg_catalog_bin")
_OUR_LOGGERS = ("lakekeeper", "lakekeeper_host")


def log_levels(settings: Settings | None) -> tuple[int, dict[str, int]]:
    """(root level, {logger: level}) from ``LAKEKEEPER__LOG_LEVEL`` and ``RUST_LOG``.

    ``RUST_LOG`` as Lakekeeper's compose files set it (``info``, ``info,lakekeeper=debug``): its
    default level applies unless ``LOG_LEVEL`` is set, and a level for Lakekeeper's own target applies
    to this server's loggers. Targets of other Rust crates (axum, sqlx, ...) have no counterpart here.
    """
    host = settings.host if settings is not None else None
    default = logging.INFO
    targets: dict[str, int] = {}
    for directive in ((host.rust_log or "") if host else "").split(","):
        target, _, level = directive.strip().rpartition("=")
        value = _RUST_LEVELS.get(level.strip().lower())
        if value is None:
            continue
        if not target:
            default = value
        elif target.split("::")[0].strip() in _OUR_TARGETS:
            targets.update(dict.fromkeys(_OUR_LOGGERS, value))
    if host is not None and host.log_level:
        default = getattr(logging, host.log_level.upper(), logging.INFO)
    return default, targets
