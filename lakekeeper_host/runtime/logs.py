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
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "target": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload)


def setup_logging(settings: Settings | None) -> None:
    level = (settings.host.log_level if settings else "info").upper()
    handler = logging.StreamHandler(sys.stderr)
    if settings is None or settings.host.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level, logging.INFO))
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
