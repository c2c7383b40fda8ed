"""The three kinds of tabular: Iceberg tables, Iceberg views and generic tables (Lance, Parquet, ...).

Inside the server a kind is its ``tabular.typ`` value, which is also its authorization resource
kind (``Resource("generic_table", ...)``). On the wire Lakekeeper spells the third kind
``generic-table`` (``TabularId`` in undrop and search, the ``tabular-type`` of events, task
entities); :func:`wire` and :func:`from_wire` translate, :func:`label` and :func:`error_label`
word messages and error types.
"""

from __future__ import annotations

TABLE = "table"
VIEW = "view"
GENERIC_TABLE = "generic_table"
KINDS = (TABLE, VIEW, GENERIC_TABLE)

_WIRE = {TABLE: "table", VIEW: "view", GENERIC_TABLE: "generic-table"}
_FROM_WIRE = {value: kind for kind, value in _WIRE.items()}
_LABEL = {TABLE: "Table", VIEW: "View", GENERIC_TABLE: "Generic table"}
_ERROR_LABEL = {TABLE: "Table", VIEW: "View", GENERIC_TABLE: "GenericTable"}


def wire(kind: str) -> str:
    """``generic_table`` -> ``generic-table`` (tables and views are spelled the same)."""
    return _WIRE.get(kind, kind)


def from_wire(value: str) -> str | None:
    """A kind as a client spells it (``table``, ``view``, ``generic-table``); None for anything else."""
    return _FROM_WIRE.get(value)


def label(kind: str) -> str:
    """``Table``, ``View``, ``Generic table``: for messages."""
    return _LABEL.get(kind, "Tabular")


def error_label(kind: str) -> str:
    """``Table``, ``View``, ``GenericTable``: the prefix of error types (``GenericTableProtected``)."""
    return _ERROR_LABEL.get(kind, "Tabular")
