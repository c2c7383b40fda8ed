"""HTML form fields generated from the storage plugins' profile and credential classes.

A storage plugin registers attrs classes (``StorageSpec.profile_cls`` / ``credential_cls``); the
console turns their fields into inputs, and the submitted form back into the kebab-case JSON body
the management API parses. What the values must satisfy is decided by the API alone.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any

import attrs
from attrs import frozen

from lakekeeper_host.config.types import Secret


@frozen
class FormField:
    key: str  # kebab-case JSON key
    kind: str  # text | number | bool | optional-bool | secret | json
    required: bool
    default: Any = None  # None when the field has none (never attrs.NOTHING)
    hint: str = ""  # what to enter, with an example

    @property
    def label(self) -> str:
        return self.key.replace("-", " ")

    @property
    def example(self) -> str:
        """The example of the hint (after "e.g. "), as an input's placeholder."""
        marker = "e.g. "
        return self.hint.split(marker, 1)[1].rstrip(".") if marker in self.hint else ""


# What to enter in the fields of the installed storage plugins, with an example. A plugin may give its
# own hint as attrs field metadata ``{"hint": "..."}``; ``(storage type, key)`` entries win over ``key`` ones.
HINTS: dict[tuple[str, str] | str, str] = {
    "root": "A folder on the server's disk that will hold the warehouse, e.g. /srv/lakehouse/demo",
    "storage-layout": 'Where tables go below the root: {"type": "default"} (flat), {"type": "tabular-only"} or '
                      '{"type": "full-hierarchy"}; e.g. {"type": "full-hierarchy"}',
    "bucket": "The bucket name, without s3:// or gs://, e.g. lakehouse-prod",
    "region": "The bucket's region, e.g. eu-central-1",
    "key-prefix": "A folder inside the bucket for this warehouse, e.g. warehouses/sales",
    ("s3", "endpoint"): "For S3-compatible stores (MinIO, SeaweedFS): the endpoint URL, e.g. http://127.0.0.1:8333",
    ("adls", "endpoint"): "Another Blob endpoint (Azurite, sovereign clouds), e.g. http://127.0.0.1:10000/devstoreaccount1",
    "path-style-access": "Address the bucket in the path instead of the host name (most S3-compatible stores), "
                         "e.g. true",
    "flavor": "aws (Amazon S3) or s3-compat (any other S3 API), e.g. s3-compat",
    "sts-enabled": "Vend short-lived credentials to clients through STS, e.g. true",
    "sts-role-arn": "The role STS assumes for vended credentials, e.g. arn:aws:iam::123456789012:role/lakehouse",
    "assume-role-arn": "A role the server assumes to reach the bucket, e.g. arn:aws:iam::123456789012:role/catalog",
    "sts-endpoint": "An STS endpoint other than the storage endpoint's, e.g. http://127.0.0.1:8333",
    "sts-token-validity-seconds": "How long vended credentials last, in seconds, e.g. 3600",
    "sts-session-tags": 'Tags added to every STS session, as a JSON object, e.g. {"team": "data"}',
    "allow-alternative-protocols": "Also accept s3a:// and s3n:// locations, e.g. true",
    "remote-signing-url-style": "auto, path or virtual_host: how signed request URLs address the bucket, e.g. auto",
    "push-s3-delete-disabled": "Tell clients not to delete files themselves (the catalog purges), e.g. true",
    "aws-kms-key-arn": "A KMS key for server-side encryption, e.g. arn:aws:kms:eu-central-1:123456789012:key/1234abcd",
    "remote-signing-enabled": "Offer S3 remote signing to clients that ask for it, e.g. true",
    "legacy-md5-behavior": "Send Content-MD5 with uploads, for stores that require it, e.g. false",
    "aws-access-key-id": "The access key id, e.g. AKIAIOSFODNN7EXAMPLE",
    "aws-secret-access-key": "The secret access key (kept encrypted, never shown again), e.g. wJalrXUtnFEMI/K7MDENG",
    "external-id": "The external id the role's trust policy requires, e.g. lakekeeper-prod",
    "account-name": "The storage account, e.g. lakehouseprod",
    "filesystem": "The container (filesystem) inside the account, e.g. warehouse",
    "host": "The account's host when not dfs.core.windows.net, e.g. dfs.core.usgovcloudapi.net",
    "authority-host": "The Entra ID authority, e.g. https://login.microsoftonline.com",
    "sas-enabled": "Vend SAS tokens to clients, e.g. true",
    "sas-token-validity-seconds": "How long vended SAS tokens last, in seconds, e.g. 3600",
    "sas-scope": "directory (the table's folder) or filesystem (the whole container), e.g. directory",
    ("adls", "key"): "The account's shared access key (kept encrypted, never shown again), e.g. Eby8vdM02xNOcqF...",
    "client-id": "The app registration's client id, e.g. 00000000-0000-0000-0000-000000000000",
    "client-secret": "The app registration's secret (kept encrypted, never shown again), e.g. 8Q~abc...",
    "tenant-id": "The Entra ID tenant, e.g. 00000000-0000-0000-0000-000000000000",
    ("gcs", "key"): 'The service account key file\'s JSON, e.g. {"type": "service_account", "project_id": "..."}',
}
_KIND_HINTS = {
    "text": "Text, e.g. value",
    "number": "A whole number, e.g. 60",
    "bool": "true or false, e.g. true",
    "optional-bool": "true or false, or the default, e.g. true",
    "secret": "Kept encrypted and never shown again, e.g. s3cr3t",
    "json": 'A JSON value, e.g. {"key": "value"}',
}


def hint_for(storage_type: str, key: str, kind: str, metadata: Any = None) -> str:
    """The hint of one field: the plugin's own, else the console's for this storage type or key,
    else one for its kind of value (every field gets an example)."""
    own = (metadata or {}).get("hint") if hasattr(metadata, "get") else None
    return own or HINTS.get((storage_type, key)) or HINTS.get(key) or _KIND_HINTS[kind]


@frozen
class FormSection:
    """The inputs of one profile type or credential variant; ``input_name(field)`` keeps sections apart."""

    scope: str  # e.g. "profile.s3", "credential.s3.access-key"
    title: str
    fields: tuple[FormField, ...]
    tag: dict[str, str] = attrs.field(factory=dict)  # discriminators added to the body

    def input_name(self, field: FormField) -> str:
        return f"{self.scope}.{field.key}"


def _kind(annotation: Any) -> tuple[str, bool]:
    """(input kind, optional?) for a field annotation."""
    optional = False
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args:
        optional = True
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else dict
    if annotation is bool:
        return ("optional-bool" if optional else "bool"), optional
    if annotation is int:
        return "number", optional
    if annotation is Secret:
        return "secret", optional
    if annotation is str:
        return "text", optional
    return "json", optional


def fields_of(cls: type, storage_type: str = "") -> tuple[FormField, ...]:
    annotations = typing.get_type_hints(cls)
    out = []
    for attribute in attrs.fields(cls):
        kind, optional = _kind(annotations.get(attribute.name, str))
        default = attribute.default
        has_default = default is not attrs.NOTHING
        if not has_default:
            default = None  # attrs.NOTHING must never reach a placeholder
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory() if not default.takes_self else None
        if kind == "json" and default in ({}, [], ()):
            default = None
        key = attribute.name.replace("_", "-")
        out.append(FormField(
            key=key,
            kind=kind,
            required=not has_default and not optional,
            default=None if isinstance(default, Secret) else default,
            hint=hint_for(storage_type, key, kind, attribute.metadata),
        ))
    return tuple(out)


def profile_section(spec: Any) -> FormSection:
    return FormSection(scope=f"profile.{spec.storage_type}", title=spec.storage_type,
                       fields=fields_of(spec.profile_cls, spec.storage_type), tag={"type": spec.storage_type})


def credential_sections(spec: Any) -> tuple[FormSection, ...]:
    """One section per credential variant (a base class structured by ``credential-type`` into its
    attrs subclasses), or one for an attrs credential class."""
    cls = spec.credential_cls
    if cls is None:
        return ()
    variants = [cls] if attrs.has(cls) else [sub for sub in cls.__subclasses__() if attrs.has(sub)]
    sections = []
    for variant in variants:
        credential_type = getattr(variant, "credential_type", None)
        tag = {"type": spec.storage_type}
        if isinstance(credential_type, str):
            tag["credential-type"] = credential_type
        name = credential_type if isinstance(credential_type, str) else variant.__name__
        sections.append(FormSection(scope=f"credential.{spec.storage_type}.{name}", title=name,
                                    fields=fields_of(variant, spec.storage_type), tag=tag))
    return tuple(sections)


class FormInputError(ValueError):
    """A form value that cannot even be put into JSON (e.g. a JSON field that is not JSON)."""


def read_section(section: FormSection, form: Any) -> dict[str, Any]:
    """The JSON object a section's inputs describe; empty inputs are left out (the API applies defaults)."""
    body: dict[str, Any] = dict(section.tag)
    for field in section.fields:
        raw = (form.get(section.input_name(field)) or "").strip()
        if raw == "":
            continue
        if field.kind in ("bool", "optional-bool"):
            body[field.key] = raw == "true"
        elif field.kind == "number":
            try:
                body[field.key] = int(raw)
            except ValueError:
                raise FormInputError(f"{field.key}: not a whole number: {raw!r}") from None
        elif field.kind == "json":
            try:
                body[field.key] = json.loads(raw)
            except ValueError as exc:
                raise FormInputError(f"{field.key}: not valid JSON ({exc})") from None
        else:
            body[field.key] = raw
    return body
