"""Test-only authorizer ``data-grants``: everything is allowed, except table data for listed users.

``LAKEKEEPER__TEST_READ_ONLY_USERS`` (comma-separated user ids, e.g. ``oidc~reader``) are denied
``write_data``; ``LAKEKEEPER__TEST_METADATA_ONLY_USERS`` are denied ``read_data`` and ``write_data``.
Everyone may still see and load the tables, so what differs is only the storage access a load
hands out -- which is what the vended-credential tests check.
"""

from __future__ import annotations

from attrs import frozen

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec
from lakekeeper_host.service.authz import AuthorizerBase


@frozen
class DataGrantsConfig:
    test_read_only_users: str = ""
    test_metadata_only_users: str = ""


def _ids(value: str) -> frozenset[str]:
    return frozenset(part.strip() for part in value.split(",") if part.strip())


class DataGrantsAuthorizer(AuthorizerBase):
    name = "data-grants"

    def __init__(self, config: DataGrantsConfig):
        self.read_only = _ids(config.test_read_only_users)
        self.metadata_only = _ids(config.test_metadata_only_users)

    async def is_allowed(self, actor, action, resource) -> bool:
        if action == "write_data":
            return actor.user_id not in self.read_only | self.metadata_only
        if action == "read_data":
            return actor.user_id not in self.metadata_only
        return True


@hookimpl
def lakekeeper_authorizers():
    async def build(config: DataGrantsConfig, ctx):
        return DataGrantsAuthorizer(config)

    return [BackendSpec(name="data-grants", factory=build, config_cls=DataGrantsConfig)]
