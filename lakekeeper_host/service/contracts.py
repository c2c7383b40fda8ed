"""Contract checks (Lakekeeper ``ContractVerification``): plugins may veto a change."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from attrs import frozen

from lakekeeper_host.errors import CatalogError

if TYPE_CHECKING:
    from pyiceberg.table.metadata import TableMetadata
    from pyiceberg.typedef import IcebergBaseModel
    from pyiceberg.view.metadata import ViewMetadata

    from lakekeeper_host.store.tabulars import TabularRow

log = logging.getLogger(__name__)


@frozen
class Violation:
    message: str
    type: str = "ContractViolation"


@frozen
class TabularView:
    """The table, view or generic table a drop or rename is about."""

    id: str
    warehouse_id: str
    namespace_id: str
    name: str
    typ: str  # "table", "view" or "generic_table"
    location: str
    protected: bool
    metadata: str | None  # JSON text of the current metadata (None for a generic table)

    @classmethod
    def of(cls, row: TabularRow) -> TabularView:
        return cls(
            id=row.id,
            warehouse_id=row.warehouse_id,
            namespace_id=row.namespace_id,
            name=row.name,
            typ=row.typ,
            location=row.location,
            protected=row.protected,
            metadata=row.metadata,
        )


@frozen
class RenameDestination:
    """Where a rename moves a tabular: the destination namespace (its parts) and the new name."""

    namespace: tuple[str, ...]
    name: str


class ContractChecker(Protocol):
    """``updates`` are pyiceberg's update models of one commit (``pyiceberg.table.update``: each has
    its ``action``); a table's ``metadata`` is the table's before the commit (None when the commit
    creates the table), a view's the view's as the commit leaves it."""

    name: str

    async def check_table_updates(
        self, updates: Sequence[IcebergBaseModel], metadata: TableMetadata | None
    ) -> Violation | None: ...

    async def check_view_updates(
        self, updates: Sequence[IcebergBaseModel], metadata: ViewMetadata
    ) -> Violation | None: ...

    async def check_drop(self, tabular: TabularView) -> Violation | None: ...

    async def check_rename(self, tabular: TabularView, destination: RenameDestination) -> Violation | None: ...


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

    async def check_table_updates(self, updates: Sequence[IcebergBaseModel], metadata: TableMetadata | None) -> None:
        await self._run("check_table_updates", updates, metadata)

    async def check_view_updates(self, updates: Sequence[IcebergBaseModel], metadata: ViewMetadata) -> None:
        await self._run("check_view_updates", updates, metadata)

    async def check_drop(self, tabular: TabularView) -> None:
        await self._run("check_drop", tabular)

    async def check_rename(self, tabular: TabularView, destination: RenameDestination) -> None:
        await self._run("check_rename", tabular, destination)
