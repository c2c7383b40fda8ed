"""SigV4 signing of a client's S3 request with the warehouse's own credentials (remote signing).

Behaves like Lakekeeper's ``server/s3_signer/sign.rs``: path segments are re-encoded once, the
payload is ``UNSIGNED-PAYLOAD`` unless the client sent a body (bulk delete) or its own
``x-amz-content-sha256``, a few volatile headers are left unsigned, and the returned header map
carries a ``Cache-Control`` hint that Iceberg's Java signer client honours.
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from botocore.auth import UNSIGNED_PAYLOAD, S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import ReadOnlyCredentials

UNSIGNED_HEADERS = frozenset({"range", "x-amz-date", "amz-sdk-invocation-id", "amz-sdk-retry", "authorization"})
CACHEABLE_METHODS = frozenset({"GET", "HEAD"})


class _RemoteRequestAuth(S3SigV4Auth):
    def payload(self, request: AWSRequest) -> str:
        declared = request.context.get("declared_payload_hash")
        if declared:
            return declared
        if request.body:
            body = request.body if isinstance(request.body, bytes) else str(request.body).encode()
            return hashlib.sha256(body).hexdigest()
        return UNSIGNED_PAYLOAD


def reencode_path(uri: str) -> str:
    """Decode each path segment and encode it once, the way S3 canonicalises the path."""
    parts = urlsplit(uri)
    path = "/".join(quote(unquote(segment), safe="-_.~") for segment in parts.path.split("/"))
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


def sign(
    *,
    credentials: ReadOnlyCredentials,
    method: str,
    uri: str,
    headers: dict[str, list[str]],
    body: str | None,
    region: str,
) -> tuple[str, dict[str, list[str]]]:
    """Return the URI to call and the complete header map to send."""
    method = method.upper()
    uri = reencode_path(uri)
    request = AWSRequest(method=method, url=uri, data=body.encode() if body is not None else None)
    for name, values in headers.items():
        lname = name.lower()
        if lname in UNSIGNED_HEADERS:
            continue
        if lname == "x-amz-content-sha256":
            request.context["declared_payload_hash"] = ", ".join(values)
            continue  # the signer sets it again, with the same value
        request.headers[name] = ", ".join(values)
    _RemoteRequestAuth(credentials, "s3", region).add_auth(request)

    signed = {name.lower(): value for name, value in request.headers.items()}
    result: dict[str, list[str]] = {
        name: values
        for name, values in headers.items()
        if name.lower() not in signed and name.lower() != "authorization"
    }
    for name, value in request.headers.items():
        result[name] = [value]
    result["Cache-Control"] = ["private" if method in CACHEABLE_METHODS else "no-cache"]
    return uri, result
