"""Names in catalog requests: decoding path and query parameters, validating identifiers.

Path parameters arrive **still percent-encoded** (the catalog routes match the raw request path so
that ``%2F`` inside a name cannot split a path segment); decode them only with
:func:`parse_namespace_path` and :func:`parse_name_path`. Decoding follows Lakekeeper: ``+`` means a
space (Java and Spark encode spaces that way, which is why ``+`` is forbidden in new names), parts of
a multi-level namespace are joined by ``%1F``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from urllib.parse import unquote_plus

from lakekeeper_host.errors import CatalogError, already_exists, bad_request
from lakekeeper_host.server import kinds
from lakekeeper_host.store.namespaces import NAMESPACE_SEPARATOR

MAX_NAMESPACE_DEPTH = 5


def parse_namespace_path(raw: str) -> list[str]:
    """A ``{namespace}`` path parameter (raw, percent-encoded) -> its parts."""
    return [unquote_plus(part) for part in _split_separator(raw)]


def parse_name_path(raw: str) -> str:
    """A ``{table}``/``{view}`` path parameter (raw, percent-encoded) -> the name."""
    return unquote_plus(raw)


def parse_namespace_query(value: str | None) -> list[str] | None:
    """The ``parent`` query parameter (already query-decoded once) -> parts, None when absent/empty.

    Clients encode each part before putting it into the query (PyIceberg with ``quote``, Java with
    ``URLEncoder``), so the value is decoded once more here.
    """
    if not value:
        return None
    return [unquote_plus(part) for part in _split_separator(value)]


_SEPARATOR = re.compile("%1[fF]|\x1f")


def _split_separator(value: str) -> list[str]:
    # the separator arrives encoded (%1F, in paths) or decoded (\x1f, in query values)
    return _SEPARATOR.split(value)


def namespace_to_path(parts: Sequence[str]) -> str:
    """The URL form of a namespace (parts joined by ``\\x1f``), e.g. for events and links."""
    return NAMESPACE_SEPARATOR.join(parts)


def ident(namespace: Sequence[str], name: str) -> str:
    """``ns1.ns2.name``, the form the Iceberg messages use."""
    return ".".join([*namespace, name])


def validate_namespace(parts: Sequence[str]) -> None:
    """Rules for any namespace identifier (Lakekeeper ``validate_namespace_ident``)."""
    if not parts:
        raise bad_request("Namespace must not be empty", "NamespacePartEmpty")
    if len(parts) > MAX_NAMESPACE_DEPTH:
        raise bad_request(f"Namespace exceeds maximum depth of {MAX_NAMESPACE_DEPTH}", "NamespaceDepthExceeded")
    if any("." in part for part in parts):
        raise bad_request(f"Namespace parts cannot contain '.': {list(parts)}", "NamespacePartContainsDot")
    if any(part == "" for part in parts):
        raise bad_request(f"Namespace parts cannot be empty: {list(parts)}", "NamespacePartEmpty")


def validate_new_namespace(parts: Sequence[str]) -> None:
    """Extra rules on create: no ``+`` (it decodes to a space in URLs)."""
    validate_namespace(parts)
    if any("+" in part for part in parts):
        raise bad_request("Namespace cannot contain '+' character.", "InvalidNamespace")
    if any(NAMESPACE_SEPARATOR in part for part in parts):
        raise bad_request("Namespace parts cannot contain the unit separator (0x1F)", "InvalidNamespace")


def validate_name(name: str) -> None:
    if not name:
        raise bad_request("name of the identifier cannot be empty", "IdentifierNameEmpty")


def validate_new_name(name: str, kind: str = "Table") -> None:
    """Rules for the name of a new (or renamed) table or view."""
    validate_name(name)
    if "+" in name:
        raise bad_request(f"{kind} name cannot contain '+' character.", f"Invalid{kind}Name")


def conflict_for_existing(kind_found: str, namespace: Sequence[str], name: str, kind_wanted: str) -> CatalogError:
    """409 for a name already used in the namespace, worded as the Iceberg tests expect.

    The same kind: "Table already exists: ns.t"; another kind: "View with same name already
    exists: ns.t" (tables, views and generic tables share one name space).
    """

    label = kinds.label(kind_found)
    if kind_found == kind_wanted:
        return already_exists(f"{label} already exists: {ident(namespace, name)}")
    return already_exists(f"{label} with same name already exists: {ident(namespace, name)}")
