"""Process logging: JSON lines (the default, as Lakekeeper logs) or plain text, on stderr."""

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
    for noisy in ("hypercorn.access", "databases", "aiosqlite", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
