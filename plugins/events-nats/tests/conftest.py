"""NATS servers for the plugin's tests: the run's ``nats_server`` comes from ``lakekeeper_testing``,
``nats_factory`` starts extra ones (auth, restarts) for one test."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from lakekeeper_testing.services import NatsServer, service_or_skip


@attrs.define(kw_only=True, eq=False)
class AuthNatsServer(NatsServer):
    """``nats-server`` with extra command-line arguments (``--user``/``--pass``, ``--auth``)."""

    extra_args: list[str] = attrs.field(factory=list)

    def _command(self) -> list[str]:
        return [*super()._command(), *self.extra_args]


@pytest.fixture
def nats_factory() -> Iterator:
    """Start extra servers (``extra_args`` for auth); all are closed after the test."""
    started: list[NatsServer] = []

    def make(start: bool = True, **kwargs) -> NatsServer:
        server = AuthNatsServer(**kwargs)
        started.append(server)
        if start:
            service_or_skip(server)
        return server

    yield make
    for server in started:
        server.close()


# ---------------------------------------------------------------- decentralized (JWT) auth


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _nats_jwt(issuer, subject: str, name: str, nats_claims: dict) -> str:
    """A NATS JWT (v2) signed by ``issuer``'s nkey, as ``nsc`` would issue it."""
    claims = {"jti": "", "iat": int(time.time()), "iss": issuer.public_key.decode(), "name": name, "sub": subject,
              "nats": {**nats_claims, "version": 2}}
    digest = hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()
    claims["jti"] = base64.b32encode(digest).decode().rstrip("=")
    header = {"typ": "JWT", "alg": "ed25519-nkey"}
    signing_input = _b64(json.dumps(header).encode()) + "." + _b64(json.dumps(claims).encode())
    return signing_input + "." + _b64(issuer.sign(signing_input.encode()))


def operator_mode(directory: Path) -> tuple[Path, Path]:
    """A server config trusting a fresh operator, and a user ``.creds`` file of one of its accounts.

    Returns ``(server_conf, creds_file)``; clients without the creds are refused."""
    import nkeys

    def keypair(prefix):
        return nkeys.from_seed(nkeys.encode_seed(os.urandom(32), prefix))

    operator, account, system, user = (keypair(p) for p in (
        nkeys.PREFIX_BYTE_OPERATOR, nkeys.PREFIX_BYTE_ACCOUNT, nkeys.PREFIX_BYTE_ACCOUNT, nkeys.PREFIX_BYTE_USER))
    unlimited = {"subs": -1, "data": -1, "payload": -1}
    operator_jwt = _nats_jwt(operator, operator.public_key.decode(), "operator", {"type": "operator"})
    account_jwt = _nats_jwt(operator, account.public_key.decode(), "lakekeeper", {
        "type": "account",
        "limits": {**unlimited, "imports": -1, "exports": -1, "wildcards": True, "conn": -1, "leaf": -1},
    })
    system_jwt = _nats_jwt(operator, system.public_key.decode(), "SYS", {"type": "account"})  # JetStream needs it
    user_jwt = _nats_jwt(
        account, user.public_key.decode(), "catalog", {"type": "user", "pub": {}, "sub": {}, **unlimited}
    )
    conf = directory / "operator.conf"
    conf.write_text(
        f'operator: "{operator_jwt}"\nsystem_account: {system.public_key.decode()}\nresolver: MEMORY\n'
        f'resolver_preload: {{\n  {account.public_key.decode()}: "{account_jwt}"\n'
        f'  {system.public_key.decode()}: "{system_jwt}"\n}}\n'
    )
    creds = directory / "catalog.creds"
    creds.write_text(
        f"-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n"
        f"-----BEGIN USER NKEY SEED-----\n{user.seed.decode()}\n------END USER NKEY SEED------\n"
    )
    return conf, creds
