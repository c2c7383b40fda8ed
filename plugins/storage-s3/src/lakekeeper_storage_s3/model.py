"""The ``s3`` storage profile and credential as they travel on the wire (Lakekeeper §2.1, §2.2).

Both are attrs classes structured by the host's kebab-case ``WIRE`` converter. The profile is
normalised while it is built (trimmed key prefix, canonical endpoint, empty ARNs dropped), so the
host stores the normalised form; semantic checks raise a 400 that names the field.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, ClassVar
from urllib.parse import urlsplit

from attrs import field, frozen
from cattrs.gen import make_dict_structure_fn, override

from lakekeeper_host.config.types import Secret
from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.serde import WIRE, kebab

FLAVORS = ("aws", "s3-compat")
URL_STYLES = ("auto", "path", "virtual_host")
# Spellings the docs use next to the serde names
_URL_STYLE_ALIASES = {"path-style": "path", "virtual-host": "virtual_host", "virtual_host_style": "virtual_host"}
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_REGION = re.compile(r"^[a-z0-9][a-z0-9-]{0,127}$")
MAX_KEY_PREFIX = 896  # AWS allows 1024 per key; leave room for table paths


def invalid_profile(field_name: str, reason: str) -> CatalogError:
    return bad_request(f"Invalid storage-profile.{field_name}: {reason}", "InvalidStorageProfile")


def invalid_credential(reason: str) -> CatalogError:
    return bad_request(f"Invalid storage-credential: {reason}", "InvalidStorageCredential")


# ---------------------------------------------------------------- normalisation (attrs converters)


def _blank_to_none(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    return value or None


def _normalize_key_prefix(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().strip("/")
    return value or None


def normalize_endpoint(endpoint: str | None, bucket: str) -> str | None:
    """``http(s)://host[:port]/``, as Lakekeeper's ``url::Url`` prints it; a trailing bucket is dropped."""
    endpoint = _blank_to_none(endpoint)
    if endpoint is None:
        return None
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise invalid_profile("endpoint", "must be an http or https URL")
    path = parts.path
    if path.rstrip("/").endswith("/" + bucket):  # S3 consoles often show the API URL with the bucket
        path = path.rstrip("/")[: -len(bucket)]
    if path.strip("/"):
        raise invalid_profile("endpoint", "must not have a path")
    return f"{parts.scheme}://{parts.netloc}/"


def _normalize_flavor(value: str) -> str:
    value = value.strip().lower()
    return "s3-compat" if value == "minio" else value


def _normalize_url_style(value: str) -> str:
    value = value.strip().lower()
    return _URL_STYLE_ALIASES.get(value, value)


@frozen
class S3Profile:
    """``{"type": "s3", ...}``: where a warehouse lives and how Lakekeeper and clients reach it."""

    storage_type: ClassVar[str] = "s3"

    bucket: str
    region: str
    # Lakekeeper requires sts-enabled; published examples omit it, so it defaults to off here
    sts_enabled: bool = False
    key_prefix: str | None = field(default=None, converter=_normalize_key_prefix)
    endpoint: str | None = None
    path_style_access: bool | None = None
    flavor: str = field(default="aws", converter=_normalize_flavor)
    sts_role_arn: str | None = field(default=None, converter=_blank_to_none)
    assume_role_arn: str | None = field(default=None, converter=_blank_to_none)
    sts_endpoint: str | None = None
    sts_token_validity_seconds: int = 3600
    sts_session_tags: dict[str, str] = field(factory=dict)
    allow_alternative_protocols: bool | None = None
    remote_signing_url_style: str = field(default="auto", converter=_normalize_url_style)
    push_s3_delete_disabled: bool = True
    aws_kms_key_arn: str | None = field(default=None, converter=_blank_to_none)
    remote_signing_enabled: bool = True
    legacy_md5_behavior: bool | None = None
    storage_layout: dict | None = None

    @property
    def alternative_protocols_allowed(self) -> bool:
        return bool(self.allow_alternative_protocols)

    @property
    def vended_role_arn(self) -> str | None:
        return self.sts_role_arn or self.assume_role_arn

    def base_key(self) -> str:
        return self.key_prefix or ""


def check_profile(profile: S3Profile) -> None:
    """The semantic checks of Lakekeeper's ``S3Profile::normalize`` (400 naming the field)."""
    check_bucket_name(profile.bucket)
    if not _REGION.match(profile.region):
        raise invalid_profile("region", f"{profile.region!r} is not a valid region name")
    if profile.key_prefix and len(profile.key_prefix) > MAX_KEY_PREFIX:
        raise invalid_profile("key-prefix", f"must be at most {MAX_KEY_PREFIX} characters")
    if profile.flavor not in FLAVORS:
        raise invalid_profile("flavor", f"must be one of {', '.join(FLAVORS)} (or minio)")
    if profile.remote_signing_url_style not in URL_STYLES:
        raise invalid_profile("remote-signing-url-style", f"must be one of {', '.join(URL_STYLES)}")
    if profile.sts_token_validity_seconds < 1:
        raise invalid_profile("sts-token-validity-seconds", "must be a positive number of seconds")
    for key, value in profile.sts_session_tags.items():
        if not 1 <= len(key) <= 128 or len(value) > 256:
            raise invalid_profile("sts-session-tags", f"tag {key!r}: keys 1-128, values 0-256 characters")
    if profile.sts_enabled and profile.flavor == "aws" and profile.vended_role_arn is None:
        raise invalid_profile(
            "sts-role-arn",
            "either `sts-role-arn` or `assume-role-arn` is required for Storage Profiles with AWS "
            "flavor if STS is enabled",
        )


def check_bucket_name(bucket: str) -> None:
    reason = None
    if not _BUCKET.match(bucket):
        reason = "must be 3-63 characters of lowercase letters, digits, '.' and '-', starting and ending alphanumeric"
    elif ".." in bucket or ".-" in bucket or "-." in bucket:
        reason = "must not contain '..', '.-' or '-.'"
    elif _is_ip(bucket):
        reason = "must not be formatted as an IP address"
    if reason:
        raise invalid_profile("bucket", f"{bucket!r} {reason}")


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------- credentials


class S3Credential:
    """``{"type": "s3", "credential-type": ...}``; structured into one of the subclasses."""

    credential_type: ClassVar[str]
    external_id: str | None


@frozen
class S3AccessKeyCredential(S3Credential):
    credential_type: ClassVar[str] = "access-key"

    aws_access_key_id: str
    aws_secret_access_key: Secret
    external_id: str | None = None


@frozen
class S3SystemIdentityCredential(S3Credential):
    """The identity of the machine Lakekeeper runs on (boto3's default credential chain)."""

    credential_type: ClassVar[str] = "aws-system-identity"

    external_id: str | None = None


UNSUPPORTED_CREDENTIAL_TYPES = ("cloudflare-r2", "aliyun-oss")


def _string(body: dict[str, Any], *names: str, required: bool) -> str | None:
    for name in names:
        if name in body and body[name] is not None:
            value = body[name]
            if not isinstance(value, str):
                raise invalid_credential(f"{name} must be a string")
            return value
    if required:
        raise invalid_credential(f"{' or '.join(names)} is required")
    return None


def structure_credential(body: Any, _: type = S3Credential) -> S3Credential:
    if not isinstance(body, dict):
        raise invalid_credential("must be an object")
    ctype = body.get("credential-type")
    if ctype == S3AccessKeyCredential.credential_type:
        return S3AccessKeyCredential(
            aws_access_key_id=_string(body, "aws-access-key-id", "access-key-id", required=True),
            aws_secret_access_key=Secret(
                _string(body, "aws-secret-access-key", "secret-access-key", required=True)
            ),
            external_id=_string(body, "external-id", required=False),
        )
    if ctype == S3SystemIdentityCredential.credential_type:
        return S3SystemIdentityCredential(external_id=_string(body, "external-id", required=False))
    if ctype in UNSUPPORTED_CREDENTIAL_TYPES:
        raise invalid_credential(f"credential-type {ctype!r} is not supported by this server")
    raise invalid_credential(
        f"credential-type must be one of access-key, aws-system-identity (got {ctype!r})"
    )


# ---------------------------------------------------------------- plugin configuration


@frozen
class S3StorageConfig:
    """``LAKEKEEPER__*`` keys of the S3 plugin (Lakekeeper §4.2)."""

    enable_aws_system_credentials: bool = False
    # let aws-system-identity credentials access S3 directly, without assume-role-arn
    s3_enable_direct_system_credentials: bool = False
    # a warehouse assuming a role with the system identity must give an external-id
    s3_require_external_id_for_system_credentials: bool = True


# ---------------------------------------------------------------- WIRE hooks

_PROFILE_ALIASES = {"s3-url-detection-mode": "remote-signing-url-style"}


def _make_profile_hook():
    import attrs

    generated = make_dict_structure_fn(
        S3Profile, WIRE, **{a.name: override(rename=kebab(a.name)) for a in attrs.fields(S3Profile)}
    )

    def structure_profile(body: Any, cls: type) -> S3Profile:
        if isinstance(body, dict):
            body = dict(body)
            for alias, name in _PROFILE_ALIASES.items():
                if alias in body and name not in body:
                    body[name] = body.pop(alias)
        profile = generated(body, cls)
        check_profile(profile)
        # the endpoint rules need the bucket, so they run once the object exists
        endpoint = normalize_endpoint(profile.endpoint, profile.bucket)
        sts_endpoint = normalize_endpoint(profile.sts_endpoint, profile.bucket)
        if (endpoint, sts_endpoint) != (profile.endpoint, profile.sts_endpoint):
            profile = attrs.evolve(profile, endpoint=endpoint, sts_endpoint=sts_endpoint)
        return profile

    return structure_profile


def register_wire_hooks() -> None:
    """Teach the host's wire converter our profile aliases and the tagged credential union."""
    WIRE.register_structure_hook(S3Profile, _make_profile_hook())
    WIRE.register_structure_hook(S3Credential, structure_credential)
