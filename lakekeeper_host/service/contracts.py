"""Contract checks (Lakekeeper ``ContractVerification``): plugins may veto a change."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from attrs import frozen

from lakekeeper_host.errors import CatalogError

log = logging.getLogger(__name__)


@frozen
class Violation:
    message: str
    type: str = "ContractViolation"


class ContractChecker(Protocol):
    name: str

    async def check_table_updates(self, updates: list[Any], metadata: Any) -> Violation | None: ...

    async def check_view_updates(self, updates: list[Any], metadata: Any) -> Violation | None: ...

    async def check_drop(self, tabular: Any) -> Violation | None: ...

    async def check_rename(self, tabular: Any, destination: Any) -> Violation | None: ...


class ContractCheckers:
    """Runs every checker in order; the first violation becomes a 409."""

    def __init__(self, checkers: list[ContractChecker]):
        self.checkers = checkers

    async def _run(self, method: str, *args: Any) -> None:
        for checker in self.checkers:
            fn = getattr(checker, method, None)
            if fn is None:
                continue
            violation = await fn(*args)
            if violation is not None:
                log.info("ContractChecker %r blocked change: %s", checker.name, violation.message)
                raise CatalogError(409, violation.type, violation.message)

    async def check_table_updates(self, updates, metadata) -> None:
        await self._run("check_table_updates", updates, metadata)

    async def check_view_updates(self, updates, metadata) -> None:
        await self._run("check_view_updates", updates, metadata)

    async def check_drop(self, tabular) -> None:
        await self._run("check_drop", tabular)

    async def check_rename(self, tabular, destination) -> None:
        await self._run("check_rename", tabular, destination)
