"""A real ``nats-server`` (JetStream enabled, store in a temp dir) per test module."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest

from lakekeeper_host.testing.services import BinaryNotFound, NatsServer


@attrs.define(kw_only=True, eq=False)
class AuthNatsServer(NatsServer):
    """``nats-server`` with extra command-line arguments (``--user``/``--pass``, ``--auth``)."""

    extra_args: list[str] = attrs.field(factory=list)

    def _command(self) -> list[str]:
        return [*super()._command(), *self.extra_args]


def start_nats(**kwargs) -> NatsServer:
    try:
        return (AuthNatsServer(**kwargs) if kwargs else NatsServer()).start()
    except BinaryNotFound as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def nats_server() -> Iterator[NatsServer]:
    server = start_nats()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def nats_factory() -> Iterator:
    """Start extra servers (``extra_args`` for auth); all are closed after the test."""
    started: list[NatsServer] = []

    def make(start: bool = True, **kwargs) -> NatsServer:
        server = AuthNatsServer(**kwargs)
        started.append(server)
        if start:
            try:
                server.start()
            except BinaryNotFound as exc:
                pytest.skip(str(exc))
        return server

    yield make
    for server in started:
        server.close()
