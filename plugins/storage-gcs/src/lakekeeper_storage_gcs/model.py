"""The ``gcs`` storage profile and credentials as they travel on the wire (Lakekeeper §2.1, §2.2).

Profile: ``{"type": "gcs", "bucket", "key-prefix"?, "sts-enabled"?, "storage-layout"?}``.
Credentials: ``{"type": "gcs", "credential-type": "service-account-key", "key": {<service account JSON>}}``
or ``{"type": "gcs", "credential-type": "gcp-system-identity"}``. Every semantic problem is a 400
that names the field the user has to fix.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any, ClassVar

import attrs
from attrs import field, frozen
from cattrs.gen import make_dict_structure_fn, override

from lakekeeper_host.config.types import Secret
from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.serde import WIRE, kebab

DEFAULT_STORAGE_ENDPOINT = "https://storage.googleapis.com"
DEFAULT_STS_ENDPOINT = "https://sts.googleapis.com/v1/token"
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$")
# GCS object names are at most 1024 bytes; leave room for the table paths below the prefix
MAX_KEY_PREFIX_BYTES = 896


def invalid_profile(field_name: str, reason: str) -> CatalogError:
    return bad_request(f"Invalid storage-profile.{field_name}: {reason}", "InvalidStorageProfile")


def invalid_credential(field_name: str, reason: str) -> CatalogError:
    return bad_request(f"Invalid storage-credential.{field_name}: {reason}", "InvalidStorageCredential")


# ---------------------------------------------------------------- profile


def _normalize_key_prefix(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().strip("/")
    return value or None


@frozen
class GcsProfile:
    """``{"type": "gcs", ...}``: the bucket (and folder) a warehouse lives in."""

    storage_type: ClassVar[str] = "gcs"

    bucket: str
    key_prefix: str | None = field(default=None, converter=_normalize_key_prefix)
    # vend downscoped tokens to clients (Lakekeeper's default is on)
    sts_enabled: bool = True
    storage_layout: dict | None = None

    def base_key(self) -> str:
        return self.key_prefix or ""


def check_profile(profile: GcsProfile) -> None:
    """Google's bucket naming rules and a usable key prefix (400 naming the field)."""
    check_bucket_name(profile.bucket)
    prefix = profile.key_prefix
    if prefix is None:
        return
    if len(prefix.encode()) > MAX_KEY_PREFIX_BYTES:
        raise invalid_profile("key-prefix", f"must be at most {MAX_KEY_PREFIX_BYTES} bytes")
    if any(ord(char) < 0x20 or char == "\x7f" for char in prefix):
        raise invalid_profile("key-prefix", "must not contain control characters (such as a line break)")
    if any(segment in ("", ".", "..") for segment in prefix.split("/")):
        raise invalid_profile("key-prefix", "must not contain empty, '.' or '..' path segments")


def check_bucket_name(bucket: str) -> None:
    reason = None
    if not _BUCKET.match(bucket):
        reason = (
            "must be 3-222 characters of lowercase letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit"
        )
    elif any(len(part) > 63 or not part for part in bucket.split(".")):
        reason = "must have dot-separated parts of 1-63 characters"
    elif _is_ip(bucket):
        reason = "must not be formatted as an IP address"
    elif bucket.startswith("goog") or "google" in bucket:
        reason = "must not start with 'goog' or contain 'google'"
    if reason:
        raise invalid_profile("bucket", f"{bucket!r} {reason}")


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- credentials


class GcsCredential:
    """``{"type": "gcs", "credential-type": ...}``; structured into one of the subclasses."""

    credential_type: ClassVar[str]


# The service account key file as Google issues it; the first ones are what a token request needs.
_REQUIRED_KEY_FIELDS = ("type", "project_id", "private_key_id", "private_key", "client_email", "token_uri")
_OPTIONAL_KEY_FIELDS = (
    "client_id",
    "auth_uri",
    "auth_provider_x509_cert_url",
    "client_x509_cert_url",
    "universe_domain",
)


@frozen
class ServiceAccountKey:
    """A GCP service account key (the JSON file from ``gcloud iam service-accounts keys create``)."""

    project_id: str
    client_email: str
    private_key_id: str
    private_key: Secret
    token_uri: str
    # the other fields of the key file, kept so the key Google sees is the one the user gave
    extra: dict[str, str] = field(factory=dict)

    def info(self) -> dict[str, str]:
        """The key as ``google.oauth2.service_account.Credentials.from_service_account_info`` reads it."""
        return {
            **self.extra,
            "type": "service_account",
            "project_id": self.project_id,
            "client_email": self.client_email,
            "private_key_id": self.private_key_id,
            "private_key": self.private_key.get(),
            "token_uri": self.token_uri,
        }


# the key file's own (snake_case) field names, for the OpenAPI description
SERVICE_ACCOUNT_KEY_SCHEMA = {
    "type": "object",
    "description": "The service account key file as Google issues it (an object, or that JSON as a string)",
    "properties": {
        **{name: {"type": "string"} for name in (*_REQUIRED_KEY_FIELDS, *_OPTIONAL_KEY_FIELDS)},
        "type": {"const": "service_account"},
        "private_key": {"type": "string", "writeOnly": True, "description": "secret: kept encrypted, never returned"},
    },
    "required": list(_REQUIRED_KEY_FIELDS),
}


@frozen
class GcsServiceAccountKeyCredential(GcsCredential):
    credential_type: ClassVar[str] = "service-account-key"

    key: ServiceAccountKey = field(metadata={"json_schema": SERVICE_ACCOUNT_KEY_SCHEMA})


@frozen
class GcsSystemIdentityCredential(GcsCredential):
    """Application Default Credentials of the machine Lakekeeper runs on (metadata server, workload identity)."""

    credential_type: ClassVar[str] = "gcp-system-identity"


CREDENTIAL_TYPES = (GcsServiceAccountKeyCredential.credential_type, GcsSystemIdentityCredential.credential_type)


def structure_service_account_key(value: Any) -> ServiceAccountKey:
    if isinstance(value, str):  # the key file pasted as a string
        try:
            value = json.loads(value)
        except ValueError:
            raise invalid_credential("key", "must be the service account key JSON object") from None
    if not isinstance(value, dict):
        raise invalid_credential("key", "must be the service account key JSON object")
    for name in _REQUIRED_KEY_FIELDS:
        if not isinstance(value.get(name), str) or not value[name].strip():
            raise invalid_credential(f"key.{name}", "is required and must be a non-empty string")
    if value["type"] != "service_account":
        raise invalid_credential("key.type", f"must be 'service_account' (got {value['type']!r})")
    if not value["token_uri"].startswith(("https://", "http://")):
        raise invalid_credential("key.token_uri", "must be an http(s) URL")
    key = ServiceAccountKey(
        project_id=value["project_id"],
        client_email=value["client_email"],
        private_key_id=value["private_key_id"],
        private_key=Secret(value["private_key"]),
        token_uri=value["token_uri"],
        extra={name: value[name] for name in _OPTIONAL_KEY_FIELDS if isinstance(value.get(name), str)},
    )
    _check_private_key(key)
    return key


def _check_private_key(key: ServiceAccountKey) -> None:
    """google-auth parses the PEM key the way it will sign with it; a broken key fails now, not at first use."""
    from google.oauth2 import service_account

    try:
        service_account.Credentials.from_service_account_info(key.info())
    except (ValueError, TypeError, IndexError) as exc:
        # the message of a PEM parse error names no secret material
        raise invalid_credential("key.private_key", f"is not a usable PEM private key ({type(exc).__name__})") from None


def structure_credential(body: Any, _: type = GcsCredential) -> GcsCredential:
    if not isinstance(body, dict):
        raise bad_request("Invalid storage-credential: must be an object", "InvalidStorageCredential")
    ctype = body.get("credential-type")
    if ctype == GcsServiceAccountKeyCredential.credential_type:
        if "key" not in body:
            raise invalid_credential("key", "is required for credential-type service-account-key")
        return GcsServiceAccountKeyCredential(key=structure_service_account_key(body["key"]))
    if ctype == GcsSystemIdentityCredential.credential_type:
        return GcsSystemIdentityCredential()
    raise invalid_credential("credential-type", f"must be one of {', '.join(CREDENTIAL_TYPES)} (got {ctype!r})")


# ---------------------------------------------------------------- plugin configuration


@frozen
class GcsStorageConfig:
    """``LAKEKEEPER__*`` keys of the GCS plugin (``gcp-system-identity`` is allowed by the host's
    ``LAKEKEEPER__ENABLE_GCP_SYSTEM_CREDENTIALS``).

    The two endpoints default to Google's; tests and emulators (fake-gcs-server) point them elsewhere.
    """

    # the GCS JSON API Lakekeeper uses; any other than Google's also reaches clients as gcs.service.host
    # example: http://fake-gcs:4443
    gcs_storage_endpoint: str = DEFAULT_STORAGE_ENDPOINT
    # the Security Token Service that exchanges Lakekeeper's token for table-scoped (downscoped) ones
    # example: https://sts.example.internal/v1/token
    gcs_sts_endpoint: str = DEFAULT_STS_ENDPOINT

    @property
    def storage_endpoint(self) -> str:
        return self.gcs_storage_endpoint.rstrip("/")

    @property
    def custom_storage_endpoint(self) -> bool:
        return self.storage_endpoint != DEFAULT_STORAGE_ENDPOINT


# ---------------------------------------------------------------- WIRE hooks


def _make_profile_hook():
    generated = make_dict_structure_fn(
        GcsProfile, WIRE, **{a.name: override(rename=kebab(a.name)) for a in attrs.fields(GcsProfile)}
    )

    def structure_profile(body: Any, cls: type) -> GcsProfile:
        profile = generated(body, cls)
        check_profile(profile)
        return profile

    return structure_profile


def register_wire_hooks() -> None:
    """Teach the host's wire converter the profile checks and the tagged credential union."""
    WIRE.register_structure_hook(GcsProfile, _make_profile_hook())
    WIRE.register_structure_hook(GcsCredential, structure_credential)
