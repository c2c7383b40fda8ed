"""Built-in event sink ``log``: prints CloudEvents when ``LAKEKEEPER__LOG_CLOUDEVENTS=true``."""

from __future__ import annotations

import json
import logging

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec, BuildContext
from lakekeeper_host.service.events import CloudEvent, EventSink

log = logging.getLogger("lakekeeper.cloudevents")


class LogSink:
    name = "log"

    async def publish(self, event: CloudEvent) -> None:
        log.info("cloudevent %s", json.dumps(event.to_structured(), default=str))

    async def close(self) -> None:
        return None


async def _build(config: None, ctx: BuildContext) -> LogSink | None:
    return LogSink() if ctx.settings.host.log_cloudevents else None


@hookimpl
def lakekeeper_event_sinks() -> list[BackendSpec[EventSink, None]]:
    return [BackendSpec(name="log", factory=_build)]
