"""Test-only storage ``keyed``: a file warehouse that only works with the right credential.

Profile ``{"type": "keyed", "root": "/abs/dir"}``, credential
``{"type": "keyed", "credential-type": "token", "token": "..."}``. The storage accepts a token equal
to the content of ``<root>/.token`` for reads and writes -- so a test can "rotate" the key on the storage side.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from attrs import frozen

from lakekeeper_host import hookimpl
from lakekeeper_host.builtins.storage_file import FileProfile, FileStorage
from lakekeeper_host.registry import StorageSpec


@frozen
class KeyedProfile:
    storage_type: ClassVar[str] = "keyed"
    root: str


@frozen
class KeyedCredential:
    credential_type: str
    token: str


class KeyedStorage(FileStorage):
    storage_type = "keyed"

    def __init__(self, profile: KeyedProfile, credential: KeyedCredential | None):
        super().__init__(FileProfile(root=profile.root))
        self.token = credential.token if credential else None
        self.root = profile.root

    def _check_token(self) -> None:
        if self.token != (Path(self.root) / ".token").read_text().strip():
            raise PermissionError("token rejected by storage")

    async def write(self, location: str, data: bytes) -> None:
        self._check_token()
        await super().write(location, data)

    async def read(self, location: str) -> bytes:
        self._check_token()
        return await super().read(location)


@hookimpl
def lakekeeper_storage_profiles():
    return [
        StorageSpec(
            storage_type="keyed",
            profile_cls=KeyedProfile,
            credential_cls=KeyedCredential,
            factory=lambda p, c, ctx: KeyedStorage(p, c),
        )
    ]
