"""``abfss://<filesystem>@<account>.<host>/<path>`` locations, their ``wasbs://`` spelling and canonical form."""

from __future__ import annotations

from attrs import frozen

CANONICAL_SCHEME = "abfss"
ALTERNATIVE_SCHEMES = ("wasbs",)
ADLS_SCHEMES = (CANONICAL_SCHEME, *ALTERNATIVE_SCHEMES)


class InvalidAdlsLocation(ValueError):
    pass


@frozen
class AdlsLocation:
    scheme: str
    filesystem: str
    account: str
    host: str  # the endpoint suffix after the account, e.g. dfs.core.windows.net
    path: str  # blob name prefix without a leading slash; "" for the filesystem root

    @classmethod
    def parse(cls, location: str) -> AdlsLocation:
        scheme, sep, rest = location.partition("://")
        scheme = scheme.lower()
        if not sep or scheme not in ADLS_SCHEMES:
            raise InvalidAdlsLocation(f"Not an ADLS location (abfss://<filesystem>@<account>.<host>/...): {location}")
        authority, _, path = rest.partition("/")
        filesystem, at, account_host = authority.partition("@")
        account, dot, host = account_host.partition(".")
        if not at or not filesystem or not account or not dot or not host:
            raise InvalidAdlsLocation(f"ADLS location without <filesystem>@<account>.<host>: {location}")
        return cls(scheme, filesystem, account.lower(), host.lower(), path)

    def __str__(self) -> str:
        root = f"{self.scheme}://{self.filesystem}@{self.account}.{self.host}"
        return f"{root}/{self.path}" if self.path else root

    @property
    def dir_prefix(self) -> str:
        """The blob name prefix of everything below this location (``path/``, or ``""`` at the root)."""
        path = self.path.strip("/")
        return f"{path}/" if path else ""

    def child(self, path: str) -> AdlsLocation:
        return AdlsLocation(self.scheme, self.filesystem, self.account, self.host, path.lstrip("/"))

    def canonical(self) -> AdlsLocation:
        """``wasbs://fs@acct.blob.<suffix>/p/`` -> ``abfss://fs@acct.dfs.<suffix>/p``."""
        host = self.host
        if self.scheme != CANONICAL_SCHEME and host.startswith("blob."):
            host = "dfs." + host[5:]
        path = self.path.rstrip("/")
        return AdlsLocation(CANONICAL_SCHEME, self.filesystem, self.account, host, path)


def canonical(location: str) -> str:
    try:
        return str(AdlsLocation.parse(location).canonical())
    except InvalidAdlsLocation:
        return location.rstrip("/")


def scheme_of(location: str) -> str:
    return location.partition("://")[0].lower()
