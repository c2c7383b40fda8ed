"""The one protocol of a write that swaps metadata files in the database: :func:`settled_write`.

Commits and the create paths (createTable, registerTable, createView, registerView) write metadata
files BEFORE the database swap, then run the swap in a transaction. A failure before COMMIT rolls
back and deletes the files written for it. When the COMMIT itself fails (connection lost, request
timed out), :func:`settle_uncertain_commit` reads the rows again: files are deleted only when the
swap certainly did not land; when it cannot tell, the files stay and the answer is 500
``CommitStateUnknownException``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from attrs import define, field, frozen

from lakekeeper_host.errors import (
    commit_failed,
    commit_state_unknown,
    service_unavailable,
)
from lakekeeper_host.server import metadata_io
from lakekeeper_host.service.state import AppState
from lakekeeper_host.service.storage import Storage
from lakekeeper_host.store import tabulars as tabular_store
from lakekeeper_host.store.tabulars import TabularRow

log = logging.getLogger(__name__)

# how long the re-read of an uncertain commit may take before the answer is "unknown"
VERIFY_SECONDS = 10.0


@frozen
class Swap:
    """One compare-and-swap of a transaction: the tabular, the location it expected (None: it was
    created or un-staged), the metadata file it was pointed at (None: a ``stage-create`` row),
    the tabular's location (a file is only ever deleted inside it; None: nothing to delete) and
    whether this request wrote that file (False: a registered file is the user's, never deleted)."""

    tabular_id: str
    expected_location: str | None
    new_location: str | None
    tabular_location: str | None = None
    written: bool = True


@define
class SettledWrite:
    """What the body of :func:`settled_write` works with: the transaction, and the swaps it made."""

    tx: object
    swaps: list[Swap] = field(factory=list)

    def expect(self, swap: Swap) -> None:
        """Record a swap this transaction made: if its COMMIT fails, the swaps are read back."""
        self.swaps.append(swap)


@asynccontextmanager
async def settled_write(
    state: AppState, storage: Storage, *, files: Sequence[tuple[str | None, str]] = (), creates: bool = False
) -> AsyncIterator[SettledWrite]:
    """A database transaction that points tabulars at metadata ``files`` already written
    (``(file, tabular location)`` pairs; a None file: nothing was written).

    The body swaps and calls ``write.expect(swap)`` for each swap it made. An exception in the body
    (or a COMMIT with no swap expected) rolls back, deletes ``files`` and propagates; a failed COMMIT
    after expected swaps is settled: leaving the block normally means the swaps landed after all.
    ``creates``: see :func:`settle_uncertain_commit`.
    """
    commit_sent = False
    try:
        async with state.store.transaction() as tx:
            write = SettledWrite(tx)
            yield write
            commit_sent = bool(write.swaps)  # leaving the block sends COMMIT: the outcome may be unknown
    except BaseException as failure:
        if not commit_sent:  # rolled back: nothing changed
            await metadata_io.delete_quietly(storage, [(f, inside) for f, inside in files if f])
            raise
        await settle_uncertain_commit(state, storage, write.swaps, failure, creates=creates)


def _landed(swap: Swap, row: TabularRow | None) -> bool | None:
    """Did ``swap`` land, judging by the tabular's row now? None: cannot tell.

    Another commit may already have followed ours, so the metadata log counts too: log entries
    are dropped oldest first, so ours (newer than the location we replaced) outlives that one.
    """
    if row is None:  # our INSERT would have made the row (ids are never re-used)
        return False if swap.expected_location is None else None
    if row.metadata_location == swap.new_location:
        return True
    if row.metadata_location == swap.expected_location:
        return False
    try:
        history = [e.get("metadata-file") for e in json.loads(row.metadata or "{}").get("metadata-log", [])]
    except (ValueError, AttributeError):
        return None
    if swap.new_location in history:
        return True
    if swap.expected_location is not None and swap.expected_location in history:
        return False
    return None


async def _read_rows(state: AppState, ids: list[str]) -> list[TabularRow | None]:
    # a write transaction: the primary, never a lagging read replica
    async with state.store.transaction() as tx:
        return [await tabular_store.get_tabular_by_id(tx, tabular_id) for tabular_id in ids]


async def commit_outcome(state: AppState, swaps: Sequence[Swap]) -> bool | None:
    """Whether one transaction's swaps landed (all, or -- atomic -- none); None: cannot tell."""
    try:
        # its own task: a fresh connection, not the one the failed COMMIT was sent on
        reading = asyncio.ensure_future(_read_rows(state, [s.tabular_id for s in swaps]))
        rows = await asyncio.wait_for(reading, VERIFY_SECONDS)
    except (Exception, asyncio.CancelledError) as exc:
        log.warning("could not re-read the tables of an uncertain commit: %r", exc)
        return None
    outcomes = {_landed(swap, row) for swap, row in zip(swaps, rows, strict=True)}
    return outcomes.pop() if len(outcomes) == 1 else None


async def settle_uncertain_commit(
    state: AppState, storage: Storage, swaps: Sequence[Swap], failure: BaseException, *, creates: bool = False
) -> None:
    """After the database COMMIT itself failed: returns when the commit landed after all (the
    caller answers success), deletes the new files and re-raises ``failure`` (a cancellation) or
    answers 409 when it did not, and keeps them and answers 500 ``CommitStateUnknownException``
    when the database cannot tell.

    A cancelled COMMIT (``MAX_REQUEST_TIME``) is settled too: a 408 would make a client delete
    the files of a commit that may have landed.

    ``creates``: the request is a create or register endpoint, whose clients read a 409 as
    "already exists" (Java's table error handler): one that did not land is a 503
    ``ServiceUnavailableException`` instead -- nothing was created, a retry is safe.
    """
    landed = await commit_outcome(state, swaps)
    if landed:
        log.warning("the COMMIT failed (%r) but the commit landed: answering success", failure)
        return
    if landed is False:
        written = [(s.new_location, s.tabular_location) for s in swaps if s.written and s.new_location]
        await metadata_io.delete_quietly(storage, [(f, inside) for f, inside in written if inside])
        if not isinstance(failure, Exception):
            raise failure
        message = f"The database did not complete the {'request' if creates else 'commit'} ({_describe(failure)}); "
        if creates:
            raise service_unavailable(message + "nothing was created or changed, retry it") from failure
        raise commit_failed(message + "nothing was changed, retry it") from failure
    outcome = "the commit may or may not have been applied; reload the table before retrying"
    if creates:
        outcome = "the table or view may or may not have been created or registered; load it before retrying"
    raise commit_state_unknown(
        f"The database connection failed while committing ({_describe(failure)}) and the outcome could "
        f"not be read back: {outcome}"
    ) from failure


def _describe(failure: BaseException) -> str:
    if isinstance(failure, asyncio.CancelledError):
        return "the request was cancelled"
    return f"{type(failure).__name__}: {failure}" if str(failure) else type(failure).__name__
