"""Names in catalog requests: decoding path and query parameters, validating identifiers.

Path parameters arrive **still percent-encoded** (the catalog routes match the raw request path so
that ``%2F`` inside a name cannot split a path segment); decode them only with
:func:`parse_namespace_path` and :func:`parse_name_path`. Decoding follows Lakekeeper: ``+`` means a
space (Java and Spark encode spaces that way, which is why ``+`` is forbidden in new names), parts of
a multi-level namespace are joined by ``%1F``.

New names (create, rename, register) follow Lakekeeper's rules (not empty, no ``+``, namespace parts
without ``.``), and on top of them refuse what no engine can address or show safely: the URL dot
segments ``.`` and ``..`` (HTTP clients normalise them away, so no request could name the object),
control characters (U+0000-U+001F, U+007F-U+009F: NUL cannot be stored by PostgreSQL, a newline
splits log lines and SQL), the bidirectional controls that make a name read differently from what it
is (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069, "Trojan Source"), and more than
``MAX_NAME_LENGTH`` characters (a name travels in every request path). Spaces, ``/``, ``%``, dots
inside a table name and letters of any script stay allowed. Names that exist already stay addressable.
Properties of a namespace, table or view hold at most ``MAX_PROPERTIES_BYTES`` (keys and values,
UTF-8): they are returned by every load.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from urllib.parse import unquote_plus

from lakekeeper_host.errors import CatalogError, already_exists, bad_request
from lakekeeper_host.server import kinds
from lakekeeper_host.store.namespaces import NAMESPACE_SEPARATOR

MAX_NAMESPACE_DEPTH = 5
# characters in a table or view name and in one namespace part (Glue's and most file systems' limit)
MAX_NAME_LENGTH = 255
# bytes (UTF-8) of the keys and values of one namespace's, table's or view's properties
MAX_PROPERTIES_BYTES = 1024 * 1024
_UNSAFE_IN_NAMES = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


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
    """Extra rules on create: no ``+`` (it decodes to a space in URLs), nothing :func:`_unsafe` finds."""
    validate_namespace(parts)
    if any("+" in part for part in parts):
        raise bad_request("Namespace cannot contain '+' character.", "InvalidNamespace")
    if any(NAMESPACE_SEPARATOR in part for part in parts):
        raise bad_request("Namespace parts cannot contain the unit separator (0x1F)", "InvalidNamespace")
    for part in parts:
        problem = _unsafe(part)
        if problem:
            raise bad_request(f"Namespace part {_shown(part)} {problem}", "InvalidNamespace")


def validate_name(name: str) -> None:
    if not name:
        raise bad_request("name of the identifier cannot be empty", "IdentifierNameEmpty")


def validate_new_name(name: str, kind: str = "Table") -> None:
    """Rules for the name of a new (or renamed) table or view."""
    validate_name(name)
    if "+" in name:
        raise bad_request(f"{kind} name cannot contain '+' character.", f"Invalid{kind}Name")
    problem = _unsafe(name)
    if problem:
        raise bad_request(f"{kind} name {_shown(name)} {problem}", f"Invalid{kind}Name")


def _unsafe(name: str) -> str | None:
    """Why no engine can round-trip ``name`` (see the module docstring), or None."""
    if len(name) > MAX_NAME_LENGTH:
        return f"is longer than {MAX_NAME_LENGTH} characters ({len(name)})"
    if name in (".", ".."):
        return "is a path segment no URL can name"
    found = _UNSAFE_IN_NAMES.search(name)
    if found:
        return f"contains the control character U+{ord(found.group()):04X}"
    return None


def _shown(name: str, limit: int = 40) -> str:
    """A name in a message: escaped (controls visible), cut short."""
    return ascii(name[:limit]) + (f"... ({len(name)} characters)" if len(name) > limit else "")


def check_properties_size(properties: Mapping[str, str], what: str) -> None:
    """400 when the properties (keys and values, UTF-8) exceed ``MAX_PROPERTIES_BYTES``."""
    size = sum(len(k) + len(v) for k, v in properties.items())
    if size <= MAX_PROPERTIES_BYTES // 4:  # at most 4 bytes per character: surely small enough
        return
    size = sum(len(k.encode("utf-8", "surrogatepass")) + len(v.encode("utf-8", "surrogatepass"))
               for k, v in properties.items())
    if size > MAX_PROPERTIES_BYTES:
        raise bad_request(f"The properties of the {what} would hold {size} bytes; at most {MAX_PROPERTIES_BYTES} "
                          "bytes (keys and values, UTF-8) are allowed", "PropertiesTooLarge")


def conflict_for_existing(kind_found: str, namespace: Sequence[str], name: str, kind_wanted: str) -> CatalogError:
    """409 for a name already used in the namespace, worded as the Iceberg tests expect.

    The same kind: "Table already exists: ns.t"; another kind: "View with same name already
    exists: ns.t" (tables, views and generic tables share one name space).
    """

    label = kinds.label(kind_found)
    if kind_found == kind_wanted:
        return already_exists(f"{label} already exists: {ident(namespace, name)}")
    return already_exists(f"{label} with same name already exists: {ident(namespace, name)}")
