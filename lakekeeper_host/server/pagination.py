"""Pagination shared by every list route: page sizes and opaque keyset page tokens."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import Any

from lakekeeper_host.errors import bad_request
from lakekeeper_host.service.state import AppState


def page_limit(state: AppState, page_token: str | None, page_size: int | None) -> int:
    """The Iceberg catalog's page size: the requested size clamped to [1, max]; without a size, the
    default (100) when paging (``pageToken`` present, even empty) and the maximum otherwise."""
    host = state.settings.host
    if page_size is not None:
        return max(1, min(page_size, host.pagination_size_max))
    return host.pagination_size_default if page_token is not None else host.pagination_size_max


def page_size(state: AppState, requested: int | None) -> int:
    """The management API's page size: the requested size (default when absent) clamped to [1, max]."""
    host = state.settings.host
    size = host.pagination_size_default if not requested else requested
    return max(1, min(size, host.pagination_size_max))


def encode_page_token(*keys: Any) -> str:
    """An opaque keyset cursor: the sort key of the last item returned."""
    text = json.dumps([str(key) for key in keys], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode_page_token(token: str | None, *types: Callable[[str], Any]) -> tuple[Any, ...] | None:
    """The keys of a token from :func:`encode_page_token`, each converted by its type (``int``,
    ``str``, ...); None for no or empty token; 400 ``InvalidPageToken`` for anything else."""
    if not token:
        return None
    try:
        keys = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if not isinstance(keys, list) or len(keys) != len(types) or not all(isinstance(k, str) for k in keys):
            raise ValueError("wrong shape")
        return tuple(convert(key) for convert, key in zip(types, keys, strict=True))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise bad_request(f"Invalid pageToken {token!r}", "InvalidPageToken") from None
