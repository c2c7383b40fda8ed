"""``lakekeeper-dev``: an identity provider and an OpenFGA for trying the catalog out -- NOT FOR PRODUCTION.

    lakekeeper-dev idp --port 8090        # an OIDC issuer: any user name gets tokens, no password checked
    lakekeeper-dev openfga --port 8080    # OpenFGA's HTTP API, in memory, forgotten on exit
    lakekeeper-dev token alice            # prints a token for alice from the idp above

Both servers run in the foreground until Ctrl-C (or SIGTERM), on 127.0.0.1 only. They are the test
doubles this project's own tests use (``lakekeeper_testing.oidc``, ``lakekeeper_testing.openfga_double``):
enough for alice and bob on a laptop, nothing a deployment may rely on -- docs/authorization.md says
how to run the real OpenFGA and where to point the catalog at a real identity provider.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence

DEFAULT_IDP_PORT = 8090
DEFAULT_OPENFGA_PORT = 8080
REALM = "dev"

WARNING = """\
************************************************************************************
*  {what}: FOR DEVELOPMENT ONLY -- NOT FOR PRODUCTION.
*  {why}
************************************************************************************"""


def _banner(what: str, why: str, lines: Sequence[str]) -> None:
    print(WARNING.format(what=what, why=why), flush=True)
    for line in lines:
        print(line, flush=True)


def _wait_for_signal() -> None:
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(3600):
        pass


def run_idp(port: int, audience: str | None) -> int:
    from lakekeeper_testing.oidc import OidcIssuer

    issuer = OidcIssuer(REALM, audience=audience, port=port, password_grant=True, token_lifetime=12 * 3600)
    try:
        issuer.start()
    except OSError as exc:
        print(f"lakekeeper-dev: error: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    _banner(
        "lakekeeper-dev idp", "Any user name gets a token, no password is checked, keys live in memory.",
        [
            f"issuer:          {issuer.issuer}",
            f"token endpoint:  {issuer.token_endpoint}",
            "catalog setting: LAKEKEEPER__OPENID_PROVIDER_URI=" + issuer.issuer
            + (f"  LAKEKEEPER__OPENID_AUDIENCE={audience}" if audience else ""),
            f"a token:         lakekeeper-dev token alice --port {port}",
        ],
    )
    try:
        _wait_for_signal()
    finally:
        issuer.stop()
    return 0


def run_openfga(port: int) -> int:
    from lakekeeper_testing.openfga_double import OpenFgaDouble

    double = OpenFgaDouble()
    try:
        double.start(port=port)
    except OSError as exc:
        print(f"lakekeeper-dev: error: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    _banner(
        "lakekeeper-dev openfga",
        "An in-memory stand-in for OpenFGA's HTTP API: every store, model and tuple is lost on exit.",
        [
            f"HTTP API:        {double.url}",
            f"catalog setting: LAKEKEEPER__AUTHZ_BACKEND=openfga  LAKEKEEPER__OPENFGA__ENDPOINT={double.url}",
            "then:            lakekeeper migrate   (creates the store and writes the model)",
        ],
    )
    try:
        _wait_for_signal()
    finally:
        double.stop()
    return 0


def fetch_token(user: str, port: int, client_id: str = "lakekeeper") -> str:
    """A token for ``user`` from ``lakekeeper-dev idp`` (OAuth2 password grant, any password)."""
    url = f"http://127.0.0.1:{port}/realms/{REALM}/protocol/openid-connect/token"
    form = urllib.parse.urlencode(
        {"grant_type": "password", "username": user, "password": "dev", "client_id": client_id}
    ).encode()
    with urllib.request.urlopen(urllib.request.Request(url, data=form), timeout=10) as response:  # noqa: S310
        return json.load(response)["access_token"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="lakekeeper-dev",
        description="Development doubles of an identity provider and of OpenFGA -- NOT FOR PRODUCTION.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    idp = sub.add_parser("idp", help="an OIDC issuer that gives any user name a token (no passwords)")
    idp.add_argument("--port", type=int, default=DEFAULT_IDP_PORT)
    idp.add_argument("--audience", default="lakekeeper", help="the aud claim of its tokens ('' for none)")
    openfga = sub.add_parser("openfga", help="OpenFGA's HTTP API in memory")
    openfga.add_argument("--port", type=int, default=DEFAULT_OPENFGA_PORT)
    token = sub.add_parser("token", help="print a token for USER from `lakekeeper-dev idp`")
    token.add_argument("user")
    token.add_argument("--port", type=int, default=DEFAULT_IDP_PORT, help="the idp's port")
    args = parser.parse_args(argv)
    if args.command == "idp":
        return run_idp(args.port, args.audience or None)
    if args.command == "openfga":
        return run_openfga(args.port)
    try:
        print(fetch_token(args.user, args.port))
    except (urllib.error.URLError, OSError, KeyError, ValueError) as exc:
        print(f"lakekeeper-dev: error: no token from the idp on port {args.port} "
              f"(is `lakekeeper-dev idp --port {args.port}` running?): {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
