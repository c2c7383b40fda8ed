"""Helpers of the event tests: receiving events from NATS and Kafka, starting servers, waiting."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any, Self

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.services import create_kafka_topic, read_kafka_topic

AUDIENCE = "lakekeeper"


def oidc_env(idp: OidcIssuer) -> dict[str, str]:
    return {"LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri, "LAKEKEEPER__OPENID_AUDIENCE": AUDIENCE}


def create_topic(bootstrap: str, topic: str) -> None:
    asyncio.run(create_kafka_topic(bootstrap, topic))


# ---------------------------------------------------------------- receiving events


class NatsCollector:
    """Subscribes to a subject in a background thread and keeps every structured event it receives."""

    def __init__(self, url: str, subject: str):
        self.url, self.subject = url, subject
        self.events: list[dict[str, Any]] = []
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._ready.wait(10) or self._error:
            raise RuntimeError(f"NATS subscriber did not start: {self._error!r}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _run(self) -> None:
        import nats

        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        try:
            nc = await nats.connect(self.url)

            async def on_message(msg) -> None:
                self.events.append(json.loads(msg.data))

            await nc.subscribe(self.subject, cb=on_message)
            await nc.flush()
        except BaseException as exc:  # noqa: BLE001 - reported to the test thread by __enter__
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        await self._stop.wait()
        await nc.close()

    def wait_for(self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = 30) -> list[dict[str, Any]]:
        wait_until(lambda: predicate(list(self.events)), timeout, lambda: f"NATS events: {self.events!r}")
        return list(self.events)


def kafka_events(bootstrap: str, topic: str, until: Callable[[list[dict[str, Any]]], bool], timeout: float = 30):
    """Read ``topic`` from the beginning (all partitions) until ``until(events)``; binary mode decoded."""
    events: list[dict[str, Any]] = []

    def enough(messages: list[Any]) -> bool:
        events[len(events):] = [decode_binary(m) for m in messages[len(events):]]
        return until(events)

    try:
        asyncio.run(read_kafka_topic(bootstrap, topic, enough, timeout))
    except TimeoutError:
        raise AssertionError(f"Kafka events did not arrive within {timeout}s; got {events!r}") from None
    return events


def decode_binary(message: Any) -> dict[str, Any]:
    """A Kafka binary-mode CloudEvent as the structured dict (integer extensions come back as text)."""
    event: dict[str, Any] = {"_key": message.key.decode() if message.key else None}
    for name, value in message.headers:
        text = value.decode()
        if name.startswith("ce_"):
            event[name[3:]] = text
        elif name == "content-type":
            event["datacontenttype"] = text
    event["data"] = json.loads(message.value)
    return event


def wait_until(predicate: Callable[[], bool], timeout: float, describe: Callable[[], str]) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s; {describe()}")
        time.sleep(0.05)
    return True
