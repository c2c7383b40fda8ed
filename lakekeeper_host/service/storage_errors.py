"""What went wrong talking to a store, said without repeating what the store answered.

A storage endpoint may be anything its warehouse creator chose. What such a server answers (its
body, its headers, the message an SDK parsed out of them) must not travel back to the caller: that
would turn storage validation into a way to read internal services. So storage plugins turn their
SDK's exceptions into ``storage_error(...)``: an ``OSError`` whose message names only what failed
(unreachable, connection refused, TLS, timed out, access denied, not found, an HTTP status), the
location, and an error code only when it is one the plugin knows (``NoSuchBucket``,
``AuthenticationFailed``). ``network_failure`` finds the network cause inside any SDK's exception
chain; ``describe_exception`` is the last resort for anything else.
"""

from __future__ import annotations

import enum
import errno
import logging
import re
import socket
import ssl
from collections.abc import Collection, Iterator

from lakekeeper_host.errors import CatalogError

log = logging.getLogger(__name__)


class StorageFailure(enum.Enum):
    UNREACHABLE = "unreachable"
    UNRESOLVABLE = "unreachable (the host name does not resolve)"
    REFUSED = "connection refused"
    TLS = "TLS handshake failed"
    TIMEOUT = "timed out"
    ACCESS_DENIED = "access denied"
    NOT_FOUND = "not found"
    REDIRECTED = "redirected (redirects are not followed)"
    UNEXPECTED_RESPONSE = "unexpected response"
    FAILED = "request failed"


_ERROR_TYPES: dict[StorageFailure, type[OSError]] = {
    StorageFailure.NOT_FOUND: FileNotFoundError,
    StorageFailure.ACCESS_DENIED: PermissionError,
    StorageFailure.REFUSED: ConnectionRefusedError,
    StorageFailure.TIMEOUT: TimeoutError,
}
_UNREACHABLE_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL, errno.ECONNRESET}
# links from one exception to another in the SDKs in use (urllib3 ``reason``, azure-core
# ``inner_exception``, aiohttp ``os_error``, botocore ``kwargs['error']``)
_LINKS = ("__cause__", "__context__", "reason", "inner_exception", "os_error", "error", "exc")
_TLS_NAME = re.compile(r"SSL|TLS|Certificate")
_TIMEOUT_NAME = re.compile(r"Timeout")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and every exception it carries, each once."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        linked = [getattr(current, name, None) for name in _LINKS]
        linked.extend(current.args)
        kwargs = getattr(current, "kwargs", None)
        if isinstance(kwargs, dict):
            linked.extend(kwargs.values())
        todo.extend(item for item in linked if isinstance(item, BaseException))


def network_failure(exc: BaseException) -> StorageFailure | None:
    """The network-level cause somewhere in ``exc``'s chain (DNS, refused, TLS, timeout), or None."""
    chain = list(_chain(exc))
    if any(isinstance(e, ssl.SSLError) or _TLS_NAME.search(type(e).__name__) for e in chain):
        return StorageFailure.TLS
    if any(isinstance(e, socket.gaierror) or type(e).__name__ == "NameResolutionError" for e in chain):
        return StorageFailure.UNRESOLVABLE
    if any(isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED for e in chain):
        return StorageFailure.REFUSED
    if any(isinstance(e, TimeoutError) or _TIMEOUT_NAME.search(type(e).__name__) for e in chain):
        return StorageFailure.TIMEOUT
    if any(getattr(e, "errno", None) in _UNREACHABLE_ERRNOS for e in chain):
        return StorageFailure.UNREACHABLE
    if any("Redirect" in type(e).__name__ for e in chain):  # requests' TooManyRedirects: not followed
        return StorageFailure.REDIRECTED
    if any(isinstance(e, ConnectionError) or "Connect" in type(e).__name__ for e in chain):
        return StorageFailure.UNREACHABLE
    return None


def http_failure(status: int) -> StorageFailure:
    if status in (401, 403):
        return StorageFailure.ACCESS_DENIED
    if status == 404:
        return StorageFailure.NOT_FOUND
    if 300 <= status < 400:
        return StorageFailure.REDIRECTED
    return StorageFailure.UNEXPECTED_RESPONSE


def answer_error(
    answer: BaseException,
    status: int | None,
    location: str,
    *,
    not_found: bool = False,
    denied: bool = False,
    code: str | None = None,
    known_codes: Collection[str] = (),
    note: str | None = None,
) -> OSError:
    """``storage_error`` for a store that answered: not found and access denied by the status (or, with
    ``not_found``/``denied``, by what the SDK says: an exception type, an error code), any other status
    by ``http_failure``. The full ``answer`` goes to the log (not found at debug level: it is routine)."""
    if not_found or status == 404:
        failure = StorageFailure.NOT_FOUND
    elif denied or status in (401, 403):
        failure = StorageFailure.ACCESS_DENIED
    else:
        failure = http_failure(status) if status is not None else StorageFailure.UNEXPECTED_RESPONSE
    log.log(logging.DEBUG if failure is StorageFailure.NOT_FOUND else logging.INFO, "%s: %r", location, answer)
    return storage_error(failure, location, status=status, code=code, known_codes=known_codes, note=note)


def storage_error(
    failure: StorageFailure,
    location: str,
    *,
    status: int | None = None,
    code: str | None = None,
    known_codes: Collection[str] = (),
    note: str | None = None,
) -> OSError:
    """The ``OSError`` a storage raises: ``FileNotFoundError`` for not found, ``PermissionError`` for
    access denied, ``ConnectionRefusedError`` / ``TimeoutError`` for those, ``OSError`` otherwise.

    ``code`` (what the store called the error) is kept only when it is in ``known_codes``: the
    store's own words never reach the message. ``note`` is the plugin's own text (a hint).
    """
    detail = []
    if status is not None:
        detail.append(f"HTTP {status}")
    if code and code in known_codes:
        detail.append(code)
    message = failure.value + (f" ({' '.join(detail)})" if detail else "") + f": {location}"
    if note:
        message += f" ({note})"
    return _ERROR_TYPES.get(failure, OSError)(message)


def network_error(exc: BaseException, location: str, *, note: str | None = None) -> OSError:
    """``storage_error`` for an exception that carries no HTTP answer (connection-level, or unknown)."""
    failure = network_failure(exc)
    if failure is None:
        log.info("storage request for %s failed: %r", location, exc)
        failure = StorageFailure.FAILED
        note = note or type(exc).__name__
    return storage_error(failure, location, note=note)


def describe_exception(exc: BaseException) -> str:
    """Safe words for an exception of unknown origin: a plugin's ``CatalogError`` and the built-in
    ``OSError`` family (``storage_error``, local file errors) as they are; anything else (an SDK's
    exception, which may quote the remote server) by its network cause or its type name, with the
    details in the server log."""
    if isinstance(exc, CatalogError):
        return exc.message
    if isinstance(exc, OSError) and type(exc).__module__ == "builtins":
        return str(exc)
    failure = network_failure(exc)
    log.warning("storage operation failed: %r", exc, exc_info=exc)
    return failure.value if failure is not None else f"{type(exc).__name__} (details in the server log)"
