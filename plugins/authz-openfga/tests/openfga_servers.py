"""Catalog servers with the ``openfga`` authorizer on the OpenFGA API double, for the tests that
drive the plugin through a served catalog."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.server import CatalogServer
from lakekeeper_testing.services import postgres_for_tests


@contextlib.contextmanager
def openfga_server(backend: str, double: OpenFgaDouble, idp: OidcIssuer, store_name: str,
                   **env: str) -> Iterator[CatalogServer]:
    """A catalog server with the ``openfga`` authorizer on the double and OIDC login through ``idp``,
    on ``backend`` (``sqlite``: its embedded database; ``postgres``: a fresh database); ``env`` adds
    ``LAKEKEEPER__*`` settings."""
    settings = {
        "LAKEKEEPER__AUTHZ_BACKEND": "openfga",
        "LAKEKEEPER__OPENFGA__ENDPOINT": double.url,
        "LAKEKEEPER__OPENFGA__STORE_NAME": store_name,
        "LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri,
        "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper",
        **env,
    }
    with contextlib.ExitStack() as stack:
        if backend == "postgres":
            url = stack.enter_context(postgres_for_tests())
            settings |= {"LAKEKEEPER__PG_DATABASE_URL_WRITE": url, "LAKEKEEPER__PG_DATABASE_URL_READ": url}
        server = CatalogServer(settings).start(timeout=120)
        stack.callback(server.close)
        yield server
