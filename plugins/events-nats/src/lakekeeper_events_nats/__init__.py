"""Lakekeeper event sink ``nats``: CloudEvents published to a NATS subject.

Registered through the entry point ``events_nats`` in the group ``lakekeeper``. Enabled when
``LAKEKEEPER__NATS_ADDRESS`` and ``LAKEKEEPER__NATS_TOPIC`` are set (as in Lakekeeper).

Events use the CloudEvents NATS protocol binding: structured content mode, the payload is the
JSON event format. Core NATS (the default) is at-most-once on the server side: the sink confirms
each message reached the server (PING/PONG) and fails -- so the host retries -- while it is
disconnected. With ``LAKEKEEPER__NATS_JETSTREAM=true`` every event is a JetStream publish that
waits for the stream's acknowledgement and carries ``Nats-Msg-Id: <event id>``, so retries after
a lost ack are de-duplicated by the server: at-least-once delivery without duplicates in the
stream (within its duplicate window).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from attrs import frozen

from lakekeeper_host import hookimpl
from lakekeeper_host.config.types import Secret
from lakekeeper_host.registry import BackendSpec, BuildContext, StartupError
from lakekeeper_host.service.events import CloudEvent

__version__ = "0.1.0"
__all__ = ["NatsConfig", "NatsSink"]

log = logging.getLogger(__name__)


@frozen
class NatsConfig:
    """``LAKEKEEPER__NATS_*`` (Lakekeeper §4.6) plus the JetStream options of this plugin."""

    # the NATS server; with NATS_TOPIC it turns the sink on
    # example: nats://nats:4222
    nats_address: str | None = None
    # the subject change events are published to
    # example: lakekeeper.changes
    nats_topic: str | None = None
    # user name (with NATS_PASSWORD)
    # example: lakekeeper
    nats_user: str | None = None
    # password of NATS_USER
    # example: secret
    nats_password: Secret | None = None
    # token authentication instead of user and password
    # example: s3cr3t-token
    nats_token: Secret | None = None
    # a .creds file (JWT and NKey) instead of user and password
    # example: /run/secrets/nats.creds
    nats_creds_file: str | None = None
    # JetStream: publish with acknowledgements (at-least-once)
    nats_jetstream: bool = False
    # create this stream (subjects = [topic]) if it does not exist; unset = the stream must exist
    # example: LAKEKEEPER
    nats_jetstream_stream: str | None = None
    # seconds to wait for the server's PONG (core) or the stream's ack (JetStream)
    # example: 10
    nats_ack_timeout: float = 5.0
    # seconds a connection attempt may take
    # example: 5
    nats_connect_timeout: float = 2.0

    @property
    def enabled(self) -> bool:
        return bool(self.nats_address and (self.nats_topic or "").strip())

    def auth_options(self) -> dict[str, Any]:
        methods = [
            name
            for name, present in (
                ("NATS_CREDS_FILE", self.nats_creds_file),
                ("NATS_USER/NATS_PASSWORD", self.nats_user or self.nats_password),
                ("NATS_TOKEN", self.nats_token),
            )
            if present
        ]
        if len(methods) > 1:
            raise StartupError(f"NATS event sink: configure one authentication method, not {' and '.join(methods)}")
        if self.nats_creds_file:
            return {"user_credentials": self.nats_creds_file}
        if self.nats_user or self.nats_password:
            if not (self.nats_user and self.nats_password):
                raise StartupError("NATS event sink: LAKEKEEPER__NATS_USER and LAKEKEEPER__NATS_PASSWORD go together")
            return {"user": self.nats_user, "password": self.nats_password.get()}
        if self.nats_token:
            return {"token": self.nats_token.get()}
        return {}

    def servers(self) -> list[str]:
        return [s.strip() for s in (self.nats_address or "").split(",") if s.strip()]


class NatsSink:
    """Publishes each event to ``NATS_TOPIC`` over one connection, re-established on demand."""

    name = "nats"

    def __init__(self, config: NatsConfig):
        self.config = config
        self.topic = (config.nats_topic or "").strip()
        self._auth = config.auth_options()
        self._nc: Any = None
        self._js: Any = None
        self._lock = asyncio.Lock()

    def __repr__(self) -> str:
        mode = "jetstream" if self.config.nats_jetstream else "core"
        return f"NatsSink(servers={self.config.servers()!r}, topic={self.topic!r}, mode={mode})"

    async def connect(self) -> None:
        """Connect (idempotent). Raises when no server can be reached."""
        if self._nc is not None and not self._nc.is_closed:
            return
        async with self._lock:
            if self._nc is not None and not self._nc.is_closed:
                return
            import nats  # imported when a sink connects: a server without NATS never pays for it

            nc = await nats.connect(
                servers=self.config.servers(),
                name="lakekeeper",
                connect_timeout=self.config.nats_connect_timeout,
                # a few quick reconnects ride out a blip; after that the client closes and the
                # next publish attempt (paced by the dispatcher's backoff) connects afresh
                allow_reconnect=True,
                max_reconnect_attempts=3,
                reconnect_time_wait=0.5,
                # no client-side buffering while disconnected: a publish fails at once and the
                # host's dispatcher keeps the event (in order) and retries with backoff
                pending_size=0,
                error_cb=self._on_error,
                disconnected_cb=self._on_disconnected,
                reconnected_cb=self._on_reconnected,
                **self._auth,
            )
            js = None
            if self.config.nats_jetstream:
                js = nc.jetstream(timeout=self.config.nats_ack_timeout)
                try:
                    await self._ensure_stream(js)
                except BaseException:
                    await nc.close()
                    raise
            self._nc, self._js = nc, js
            server = nc.connected_url.netloc if nc.connected_url else "?"
            log.info("publishing CloudEvents to NATS %s subject %r", server, self.topic)

    async def _ensure_stream(self, js: Any) -> None:
        from nats.js.errors import NotFoundError

        stream = self.config.nats_jetstream_stream
        if not stream:
            return
        try:
            await js.stream_info(stream)
        except NotFoundError:
            await js.add_stream(name=stream, subjects=[self.topic])
            log.info("created JetStream stream %r for subject %r", stream, self.topic)

    async def publish(self, event: CloudEvent) -> None:
        await self.connect()
        nc = self._nc
        if not nc.is_connected:
            raise ConnectionError("not connected to NATS (reconnecting)")
        payload = event.structured_json()
        if self._js is not None:
            # the stream de-duplicates on Nats-Msg-Id, so a retry after a lost ack is harmless
            await self._js.publish(
                self.topic, payload, timeout=self.config.nats_ack_timeout, headers={"Nats-Msg-Id": event.id}
            )
        else:
            await nc.publish(self.topic, payload)
            await nc.flush(timeout=self.config.nats_ack_timeout)

    async def close(self) -> None:
        nc, self._nc, self._js = self._nc, None, None
        if nc is not None and not nc.is_closed:
            try:
                await asyncio.wait_for(nc.drain(), 5)
            except Exception:  # noqa: BLE001 - drain failed: close hard
                await nc.close()

    async def _on_error(self, exc: Exception) -> None:
        log.warning("NATS event sink: %s", exc or type(exc).__name__)

    async def _on_disconnected(self) -> None:
        log.warning("NATS event sink disconnected; events are kept and retried")

    async def _on_reconnected(self) -> None:
        log.info("NATS event sink reconnected")


async def build_nats_sink(config: NatsConfig, ctx: BuildContext) -> NatsSink | None:
    if not config.enabled:
        if config.nats_address or config.nats_topic:
            log.warning("NATS event sink disabled: set both LAKEKEEPER__NATS_ADDRESS and LAKEKEEPER__NATS_TOPIC")
        return None
    sink = NatsSink(config)
    try:
        await sink.connect()
    except Exception as exc:  # noqa: BLE001 - the server must start while NATS is down; events wait and retry
        log.error("NATS event sink: cannot connect to %s yet (%s); will keep retrying", config.servers(), exc)
    return sink


@hookimpl
def lakekeeper_event_sinks() -> list[BackendSpec]:
    return [BackendSpec(name="nats", factory=build_nats_sink, config_cls=NatsConfig)]
