"""Fixtures of the OpenFGA plugin's tests.

The suite runs with ``--import-mode=importlib``, which puts no test directory on ``sys.path``; the
helpers beside these tests (the ``fga`` CLI lookup, the server builders) are imported by name,
so this directory goes on the path once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lakekeeper_testing.openfga_double import OpenFgaDouble

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.fixture(scope="module")
def double() -> Iterator[OpenFgaDouble]:
    """The OpenFGA HTTP API double (no OpenFGA server can run here), one per test module."""
    fake = OpenFgaDouble().start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def permissions_world(double: OpenFgaDouble, idp, tmp_path_factory, lakekeeper_server_factory):
    """An OpenFGA + OIDC server of this module with alice's catalog built (``permissions_setup``):
    ``(server, catalog, alice, bob, carol, root)``; bob and carol start with nothing."""
    from permissions_setup import served_catalog

    root = str(tmp_path_factory.mktemp("perms-wh"))
    names = ("alice", "bob", "carol", "root")
    # CloudEvents in the log: the grants module reads the grant events from there
    with served_catalog(lakekeeper_server_factory, double, idp, root, names, LAKEKEEPER__LOG_CLOUDEVENTS="true") as (
        server, catalog, callers
    ):
        yield (server, catalog, *callers)
