"""The ``adls`` storage profile and ``az`` credentials as they travel on the wire (Lakekeeper §2.1, §2.2).

Lakekeeper's fields and names, plus two documented extensions for stores that are not Azure's
public cloud: ``endpoint`` (the Blob service URL, e.g. Azurite's ``http://127.0.0.1:10000/devstoreaccount1``)
and ``sas-scope`` (``directory``, Lakekeeper's table-scoped SAS, needs a hierarchical-namespace
account; ``filesystem`` signs a container SAS for accounts and emulators without one).
Semantic checks raise a 400 naming the field.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, ClassVar
from urllib.parse import urlsplit

import attrs
from attrs import field, frozen
from cattrs.gen import make_dict_structure_fn, override

from lakekeeper_host.config.types import Secret
from lakekeeper_host.errors import CatalogError, bad_request
from lakekeeper_host.serde import WIRE, kebab

DEFAULT_HOST = "dfs.core.windows.net"
DEFAULT_AUTHORITY_HOST = "https://login.microsoftonline.com"
DEFAULT_SAS_VALIDITY_SECONDS = 3600
MAX_SAS_VALIDITY_SECONDS = 7 * 24 * 3600  # Azure's limit for user-delegation keys
MAX_KEY_PREFIX = 512  # Azure allows 1024 per blob name; leave room for table paths
SAS_SCOPES = ("directory", "filesystem")
_ACCOUNT = re.compile(r"^[a-z0-9]{3,24}$")
_FILESYSTEM = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?!-)){1,61}[a-z0-9]$")
_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:\d{1,5})?$")


def invalid_profile(field_name: str, reason: str) -> CatalogError:
    return bad_request(f"Invalid storage-profile.{field_name}: {reason}", "InvalidStorageProfile")


def invalid_credential(field_name: str, reason: str) -> CatalogError:
    return bad_request(f"Invalid storage-credential.{field_name}: {reason}", "InvalidStorageCredential")


def _normalize_key_prefix(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().strip("/")
    return value or None


def _lower_or_none(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().lower()
    return value or None


@frozen
class AdlsProfile:
    """``{"type": "adls", ...}``: a filesystem (container) of an Azure storage account."""

    storage_type: ClassVar[str] = "adls"

    account_name: str
    filesystem: str
    key_prefix: str | None = field(default=None, converter=_normalize_key_prefix)
    host: str | None = field(default=None, converter=_lower_or_none)
    authority_host: str | None = None
    sas_enabled: bool = True
    sas_token_validity_seconds: int | None = None
    allow_alternative_protocols: bool = False
    storage_layout: dict | None = None
    # extensions (not in Lakekeeper): see the module docstring
    endpoint: str | None = None
    sas_scope: str = "directory"

    @property
    def dfs_host(self) -> str:
        return self.host or DEFAULT_HOST

    @property
    def blob_host(self) -> str:
        """The Blob service's host suffix next to the DFS one (``wasbs://`` locations use it)."""
        host = self.dfs_host
        return "blob." + host[4:] if host.startswith("dfs.") else host

    @property
    def blob_endpoint(self) -> str:
        """Where Lakekeeper's own Blob API calls go."""
        if self.endpoint:
            return self.endpoint
        return f"https://{self.account_name}.{self.blob_host}"

    @property
    def sas_validity_seconds(self) -> int:
        return self.sas_token_validity_seconds or DEFAULT_SAS_VALIDITY_SECONDS

    @property
    def authority(self) -> str:
        return self.authority_host or DEFAULT_AUTHORITY_HOST


def check_profile(profile: AdlsProfile) -> AdlsProfile:
    """Lakekeeper's ``GenericAdlsProfile::normalize`` checks; returns the normalised profile."""
    if not _ACCOUNT.match(profile.account_name):
        raise invalid_profile("account-name", "must be 3-24 lowercase letters and digits")
    if not _FILESYSTEM.match(profile.filesystem):
        raise invalid_profile(
            "filesystem",
            "must be 3-63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit",
        )
    if profile.key_prefix and len(profile.key_prefix) > MAX_KEY_PREFIX:
        raise invalid_profile("key-prefix", f"must be less than {MAX_KEY_PREFIX} characters")
    host = profile.host
    if host is not None:
        if "://" in host:
            host = urlsplit(host).netloc
        host = host.strip("/")
        if not _HOST.match(host):
            raise invalid_profile("host", f"{profile.host!r} is not a host name (e.g. dfs.core.windows.net)")
    validity = profile.sas_token_validity_seconds
    if validity is not None and not 1 <= validity <= MAX_SAS_VALIDITY_SECONDS:
        raise invalid_profile("sas-token-validity-seconds", f"must be between 1 and {MAX_SAS_VALIDITY_SECONDS}")
    if profile.sas_scope not in SAS_SCOPES:
        raise invalid_profile("sas-scope", f"must be one of {', '.join(SAS_SCOPES)}")
    authority = profile.authority_host
    if authority is not None:
        parts = urlsplit(authority)
        if parts.scheme != "https" or not parts.netloc:
            raise invalid_profile("authority-host", "must be an https URL")
        authority = f"https://{parts.netloc}"
    endpoint = profile.endpoint
    if endpoint is not None:
        parts = urlsplit(endpoint.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query:
            raise invalid_profile("endpoint", "must be an http or https URL of the Blob service")
        endpoint = f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    return attrs.evolve(profile, host=host, authority_host=authority, endpoint=endpoint)


# ---------------------------------------------------------------- credentials


class AdlsCredential:
    """``{"type": "az", "credential-type": ...}``; structured into one of the subclasses."""

    credential_type: ClassVar[str]


@frozen
class SharedAccessKeyCredential(AdlsCredential):
    """The storage account key: Lakekeeper signs account-key SAS with it."""

    credential_type: ClassVar[str] = "shared-access-key"

    key: Secret


@frozen
class ClientCredentialsCredential(AdlsCredential):
    """An Entra ID app registration: SAS are signed with a user-delegation key."""

    credential_type: ClassVar[str] = "client-credentials"

    client_id: str
    client_secret: Secret
    tenant_id: str


@frozen
class SystemIdentityCredential(AdlsCredential):
    """The managed identity of the machine Lakekeeper runs on (user-delegation SAS)."""

    credential_type: ClassVar[str] = "azure-system-identity"


CREDENTIAL_TYPES = (
    SharedAccessKeyCredential.credential_type,
    ClientCredentialsCredential.credential_type,
    SystemIdentityCredential.credential_type,
)


def _string(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if value is None:
        raise invalid_credential(name, "is required")
    if not isinstance(value, str) or not value.strip():
        raise invalid_credential(name, "must be a non-empty string")
    return value.strip()


def structure_credential(body: Any, _: type = AdlsCredential) -> AdlsCredential:
    if not isinstance(body, dict):
        raise bad_request("Invalid storage-credential: must be an object", "InvalidStorageCredential")
    ctype = body.get("credential-type")
    if ctype == SharedAccessKeyCredential.credential_type:
        key = _string(body, "key")
        try:
            base64.b64decode(key, validate=True)
        except (binascii.Error, ValueError):
            raise invalid_credential("key", "must be the base64 storage account key") from None
        return SharedAccessKeyCredential(key=Secret(key))
    if ctype == ClientCredentialsCredential.credential_type:
        return ClientCredentialsCredential(
            client_id=_string(body, "client-id"),
            client_secret=Secret(_string(body, "client-secret")),
            tenant_id=_string(body, "tenant-id"),
        )
    if ctype == SystemIdentityCredential.credential_type:
        return SystemIdentityCredential()
    raise invalid_credential("credential-type", f"must be one of {', '.join(CREDENTIAL_TYPES)} (got {ctype!r})")


# ---------------------------------------------------------------- plugin configuration


@frozen
class AdlsStorageConfig:
    """``LAKEKEEPER__*`` keys of the ADLS plugin.

    ``azure-system-identity`` credentials are switched on by the host's
    ``LAKEKEEPER__ENABLE_AZURE_SYSTEM_CREDENTIALS`` (it also reports it under ``/management/v1/info``).
    """

    # a PEM bundle to trust for the Blob endpoint (private CAs, an emulator's self-signed certificate)
    # example: /etc/ssl/certs/azurite.pem
    adls_ca_bundle: str | None = None


# ---------------------------------------------------------------- WIRE hooks

_PROFILE_ALIASES = {"sas-token-validity": "sas-token-validity-seconds"}


def _make_profile_hook():
    generated = make_dict_structure_fn(
        AdlsProfile, WIRE, **{a.name: override(rename=kebab(a.name)) for a in attrs.fields(AdlsProfile)}
    )

    def structure_profile(body: Any, cls: type) -> AdlsProfile:
        if isinstance(body, dict):
            body = dict(body)
            for alias, name in _PROFILE_ALIASES.items():
                if alias in body and name not in body:
                    body[name] = body.pop(alias)
        return check_profile(generated(body, cls))

    return structure_profile


def register_wire_hooks() -> None:
    """Teach the host's wire converter the profile checks and the tagged credential union."""
    WIRE.register_structure_hook(AdlsProfile, _make_profile_hook())
    WIRE.register_structure_hook(AdlsCredential, structure_credential)
