"""Test-only plugin: faults at the database COMMIT of a table or view commit, create or register.

A connection that drops while the COMMIT is in flight, or a reply that comes too late for
``MAX_REQUEST_TIME``, cannot be produced on demand against a real database. This plugin makes
them happen at exactly that point: through the ordinary ``lakekeeper_startup`` hook it wraps the
store's ``transaction()`` (there is no fault seam in the host), and when armed, the next
transaction that points a tabular at a new metadata file -- an UPDATE, or the INSERT of a
create (the statements carry ``:md``; a staged row's too) -- fails
in one of these ways -- everything else, the database included, is real:

- ``reply-lost``: the COMMIT is carried out, then its reply is "lost" (ConnectionResetError);
- ``commit-lost``: the connection "drops" before the COMMIT reaches the database: the
  transaction is rolled back, then ConnectionResetError;
- ``reply-lost-db-down``: as ``reply-lost``, and the database stays unreachable (every new
  transaction fails) until :meth:`CommitFaults.heal`;
- ``reply-late``: the COMMIT is carried out and its reply never comes: the request waits until
  ``MAX_REQUEST_TIME`` cancels it;
- ``lose-race``: every compare-and-swap finds no row, as if another commit had always just moved
  the table (stays armed until :meth:`CommitFaults.disarm`).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from lakekeeper_host import hookimpl

MODES = ("reply-lost", "commit-lost", "reply-lost-db-down", "reply-late", "lose-race")


class _Rollback(Exception):
    pass


class _WatchedTransaction:
    """The store's transaction, noting whether it swaps a tabular's metadata."""

    def __init__(self, tx: Any, faults: CommitFaults):
        self._tx = tx
        self._faults = faults
        self.swaps = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._tx, name)

    def _watch(self, sql: str, values: Any) -> bool:
        """True: answer this statement as a lost race."""
        if values and values.get("md") is not None:
            self.swaps = True
            return self._faults.mode == "lose-race" and sql.lstrip().upper().startswith("UPDATE")
        return False

    async def fetch_all(self, sql, values=None):
        if self._watch(sql, values):
            self._faults.fired.append("lose-race")
            return []
        return await self._tx.fetch_all(sql, values)

    async def fetch_one(self, sql, values=None):
        if self._watch(sql, values):
            self._faults.fired.append("lose-race")
            return None
        return await self._tx.fetch_one(sql, values)

    async def execute(self, sql, values=None):
        self._watch(sql, values)
        return await self._tx.execute(sql, values)


class CommitFaults:
    """Arm with :meth:`arm`; ``fired`` lists the faults that happened."""

    def __init__(self) -> None:
        self.mode: str | None = None
        self.db_down = False
        self.fired: list[str] = []

    def arm(self, mode: str) -> None:
        assert mode in MODES, mode
        self.mode = mode

    def disarm(self) -> None:
        self.mode = None

    def heal(self) -> None:
        self.db_down = False

    @hookimpl
    def lakekeeper_startup(self, state):
        store = state.store
        original = store.transaction

        @contextlib.asynccontextmanager
        async def transaction():
            if self.db_down:
                raise ConnectionRefusedError("the database is unreachable (commit_faults test plugin)")
            mode = None
            try:
                async with original() as tx:
                    watched = _WatchedTransaction(tx, self)
                    yield watched
                    if watched.swaps and self.mode not in (None, "lose-race"):
                        mode, self.mode = self.mode, None
                        self.fired.append(mode)
                        if mode == "commit-lost":
                            raise _Rollback()
            except _Rollback:
                raise ConnectionResetError("connection lost before COMMIT (commit_faults test plugin)") from None
            if mode in ("reply-lost", "reply-lost-db-down"):
                self.db_down = mode == "reply-lost-db-down"
                raise ConnectionResetError("connection lost after COMMIT (commit_faults test plugin)")
            if mode == "reply-late":
                await asyncio.Event().wait()  # until MAX_REQUEST_TIME cancels the request

        store.transaction = transaction
