"""The NATS sink against a real nats-server: structured CloudEvents, auth, JetStream acks."""

from __future__ import annotations

import asyncio
import json
import uuid

import nats
import pytest

from lakekeeper_events_nats import NatsConfig, NatsSink, build_nats_sink
from lakekeeper_host.config.types import Secret
from lakekeeper_host.registry import StartupError
from lakekeeper_host.service.events import CloudEvent, EventDispatcher


def make_event(n: int = 0, **extensions) -> CloudEvent:
    return CloudEvent(
        id=str(uuid.uuid4()),
        source="uri:iceberg-catalog-service:test",
        type="updateTable",
        data={"n": n, "updates": []},
        time="2025-01-01T00:00:00Z",
        extensions={
            "tabular-id": "t-1", "num-events": 1, "sequence-number": 0, "actor": '{"type":"anonymous"}', **extensions
        },
    )


def config(url: str, **kwargs) -> NatsConfig:
    return NatsConfig(nats_address=url, nats_topic=kwargs.pop("topic", f"events.{uuid.uuid4().hex}"), **kwargs)


async def subscribe(url: str, subject: str, **auth):
    nc = await nats.connect(url, **auth)
    sub = await nc.subscribe(subject)
    await nc.flush()
    return nc, sub


async def test_core_publish_is_the_structured_json_event(nats_server):
    cfg = config(nats_server.url)
    nc, sub = await subscribe(nats_server.url, cfg.nats_topic)
    sink = await build_nats_sink(cfg, None)
    try:
        events = [make_event(i) for i in range(3)]
        for event in events:
            await sink.publish(event)
        received = [json.loads((await sub.next_msg(timeout=5)).data) for _ in events]
    finally:
        await sink.close()
        await nc.close()
    assert received == [e.to_structured() for e in events]
    assert received[0]["specversion"] == "1.0"
    assert received[0]["num-events"] == 1  # integer extensions stay integers


async def test_not_configured_means_no_sink():
    assert await build_nats_sink(NatsConfig(), None) is None
    assert await build_nats_sink(NatsConfig(nats_address="nats://127.0.0.1:1"), None) is None


def test_one_auth_method_and_secrets_never_printed():
    cfg = NatsConfig(nats_address="nats://x", nats_topic="t", nats_user="u", nats_password=Secret("hunter2"))
    assert cfg.auth_options() == {"user": "u", "password": "hunter2"}
    assert "hunter2" not in repr(cfg) and "hunter2" not in repr(NatsSink(cfg))
    with pytest.raises(StartupError, match="one authentication method"):
        NatsConfig(nats_user="u", nats_password=Secret("p"), nats_token=Secret("t")).auth_options()
    with pytest.raises(StartupError, match="go together"):
        NatsConfig(nats_user="u").auth_options()


async def test_user_password_auth(nats_factory):
    server = nats_factory(extra_args=["--user", "lk", "--pass", "s3cret"])
    cfg = config(server.url, nats_user="lk", nats_password=Secret("s3cret"))
    nc, sub = await subscribe(server.url, cfg.nats_topic, user="lk", password="s3cret")
    sink = await build_nats_sink(cfg, None)
    event = make_event()
    await sink.publish(event)
    assert json.loads((await sub.next_msg(timeout=5)).data)["id"] == event.id
    await sink.close()
    await nc.close()

    wrong = await build_nats_sink(config(server.url, nats_user="lk", nats_password=Secret("wrong")), None)
    with pytest.raises(nats.errors.Error):
        await wrong.publish(make_event())
    await wrong.close()


async def test_token_auth(nats_factory):
    server = nats_factory(extra_args=["--auth", "tok-123"])
    cfg = config(server.url, nats_token=Secret("tok-123"))
    nc, sub = await subscribe(server.url, cfg.nats_topic, token="tok-123")
    sink = await build_nats_sink(cfg, None)
    await sink.publish(make_event())
    assert (await sub.next_msg(timeout=5)).data
    await sink.close()
    await nc.close()


async def test_creds_file_auth(nats_factory, tmp_path):
    """Decentralized auth: an operator-mode server, a user JWT + nkey seed in a ``.creds`` file."""
    from .conftest import operator_mode

    conf, creds = operator_mode(tmp_path)
    server = nats_factory(extra_args=["-c", str(conf)])
    cfg = config(server.url, nats_creds_file=str(creds))
    nc, sub = await subscribe(server.url, cfg.nats_topic, user_credentials=str(creds))
    sink = await build_nats_sink(cfg, None)
    event = make_event()
    await sink.publish(event)
    assert json.loads((await sub.next_msg(timeout=5)).data)["id"] == event.id
    await sink.close()
    await nc.close()

    anonymous = await build_nats_sink(config(server.url), None)
    with pytest.raises(nats.errors.Error):
        await anonymous.publish(make_event())
    await anonymous.close()


async def test_server_down_at_startup_then_up(nats_factory):
    server = nats_factory(start=False)
    cfg = config(f"nats://127.0.0.1:{server.port}")
    sink = await build_nats_sink(cfg, None)  # the catalog starts anyway
    try:
        with pytest.raises(nats.errors.Error):
            await sink.publish(make_event())
        server.start()
        nc, sub = await subscribe(server.url, cfg.nats_topic)
        event = make_event()
        await sink.publish(event)
        assert json.loads((await sub.next_msg(timeout=5)).data)["id"] == event.id
        await nc.close()
    finally:
        await sink.close()


async def test_jetstream_acks_and_deduplicates_retries(nats_server):
    stream = f"LK_{uuid.uuid4().hex[:8]}"
    cfg = config(nats_server.url, nats_jetstream=True, nats_jetstream_stream=stream)
    sink = await build_nats_sink(cfg, None)
    try:
        event = make_event()
        await sink.publish(event)
        await sink.publish(event)  # a retry after a lost ack: same Nats-Msg-Id
        await sink.publish(make_event(1))
        nc = await nats.connect(nats_server.url)
        info = await nc.jetstream().stream_info(stream)
        assert info.state.messages == 2
        msg = await nc.jetstream().get_msg(stream, 1)
        assert json.loads(msg.data)["id"] == event.id
        assert msg.headers["Nats-Msg-Id"] == event.id
        await nc.close()
    finally:
        await sink.close()


async def test_jetstream_without_stream_fails_until_one_exists(nats_server):
    cfg = config(nats_server.url, nats_jetstream=True, nats_ack_timeout=1)
    sink = await build_nats_sink(cfg, None)
    try:
        with pytest.raises(nats.errors.Error):
            await sink.publish(make_event())
        nc = await nats.connect(nats_server.url)
        await nc.jetstream().add_stream(name=f"S_{uuid.uuid4().hex[:8]}", subjects=[cfg.nats_topic])
        await nc.close()
        await sink.publish(make_event())
    finally:
        await sink.close()


async def test_broker_killed_during_a_burst_jetstream_loses_nothing(nats_factory):
    """Events published while the server is down wait in the dispatcher and arrive, in order, after it returns."""
    server = nats_factory()
    stream = f"LK_{uuid.uuid4().hex[:8]}"
    cfg = config(server.url, nats_jetstream=True, nats_jetstream_stream=stream, nats_ack_timeout=1)
    sink = await build_nats_sink(cfg, None)
    failures: list[str] = []
    dispatcher = EventDispatcher([sink], max_backoff=0.5)
    dispatcher.on_failure = failures.append
    dispatcher.start()
    events = [make_event(i) for i in range(30)]
    try:
        dispatcher.publish(events[:10])
        assert await dispatcher.drain(20)
        server.stop()
        dispatcher.publish(events[10:20])  # never blocks, even with the server gone
        await asyncio.sleep(1.5)  # let some deliveries fail
        server.start()
        dispatcher.publish(events[20:])
        assert await dispatcher.drain(60)
        nc = await nats.connect(server.url)
        js = nc.jetstream()
        info = await js.stream_info(stream)
        ids = [json.loads((await js.get_msg(stream, seq)).data)["id"] for seq in range(1, info.state.last_seq + 1)]
        await nc.close()
    finally:
        await dispatcher.close()
    assert ids == [e.id for e in events]
    assert failures  # the outage was counted
