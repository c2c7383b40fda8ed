"""Catalog servers with the ``openfga`` authorizer on the OpenFGA API double, for the tests that
drive the plugin through a served catalog."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from lakekeeper_testing.oidc import OidcIssuer
from lakekeeper_testing.openfga_double import OpenFgaDouble
from lakekeeper_testing.server import CatalogServer


@contextlib.contextmanager
def openfga_server(start: Callable[..., CatalogServer], backend: str, double: OpenFgaDouble, idp: OidcIssuer,
                   store_name: str, **env: str) -> Iterator[CatalogServer]:
    """A catalog server ``start`` (``lakekeeper_server_factory``) started with the ``openfga`` authorizer on
    the double and OIDC login through ``idp``, on ``backend`` (``sqlite``: its embedded database;
    ``postgres``: a fresh database, not bootstrapped); ``env`` adds ``LAKEKEEPER__*`` settings."""
    settings = {
        "LAKEKEEPER__AUTHZ_BACKEND": "openfga",
        "LAKEKEEPER__OPENFGA__ENDPOINT": double.url,
        "LAKEKEEPER__OPENFGA__STORE_NAME": store_name,
        "LAKEKEEPER__OPENID_PROVIDER_URI": idp.uri,
        "LAKEKEEPER__OPENID_AUDIENCE": "lakekeeper",
        **env,
    }
    with start(settings, backend=backend, bootstrap=False, timeout=120) as server:
        yield server
