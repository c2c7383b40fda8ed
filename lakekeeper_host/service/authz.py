"""Authorization interface. The built-in ``allowall`` allows everything; plugins add real ones.

Hidden objects are reported as 404 by the server layer, never 403, so existence is not leaked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from attrs import frozen


@frozen
class Actor:
    """Who is calling: anonymous, or an authenticated principal (optionally assuming a role)."""

    user_id: str | None = None
    name: str | None = None
    email: str | None = None
    idp: str | None = None
    assumed_role: str | None = None
    claims: dict | None = None

    @property
    def is_anonymous(self) -> bool:
        return self.user_id is None

    def describe(self) -> dict:
        if self.user_id is None:
            return {"type": "anonymous"}
        if self.assumed_role:
            return {"type": "role", "principal": self.user_id, "assumed-role": self.assumed_role}
        return {"type": "principal", "principal": self.user_id}


ANONYMOUS = Actor()


@frozen
class Resource:
    """What an action is about: ``kind`` in server|project|warehouse|namespace|table|view|role|user."""

    kind: str
    id: str
    warehouse_id: str | None = None


class Authorizer(Protocol):
    name: str

    async def is_allowed(self, actor: Actor, action: str, resource: Resource) -> bool: ...

    async def are_allowed(
        self, actor: Actor, action: str, resources: Sequence[Resource]
    ) -> list[bool]: ...

    async def health(self) -> bool: ...

    async def bootstrap(self, actor: Actor, is_operator: bool) -> None:
        """``POST /management/v1/bootstrap``: make ``actor`` the server's ``admin``, or its
        ``operator`` when ``is-operator`` was sent (Lakekeeper's ``Authorizer::bootstrap``).
        Runs inside the bootstrap transaction: raising undoes the bootstrap."""
        ...


class AuthorizerBase:
    """Convenience base: a batch check defaults to concurrent single checks."""

    name = "base"

    async def is_allowed(self, actor: Actor, action: str, resource: Resource) -> bool:
        raise NotImplementedError

    async def are_allowed(self, actor: Actor, action: str, resources: Sequence[Resource]) -> list[bool]:
        return list(await asyncio.gather(*(self.is_allowed(actor, action, r) for r in resources)))

    async def health(self) -> bool:
        return True

    async def bootstrap(self, actor: Actor, is_operator: bool) -> None:
        return None  # nothing to record for an authorizer without server roles


class AllowAllAuthorizer(AuthorizerBase):
    name = "allowall"

    async def is_allowed(self, actor: Actor, action: str, resource: Resource) -> bool:
        return True

    async def are_allowed(self, actor, action, resources):
        return [True] * len(resources)
