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
    default: Any = None

    @property
    def label(self) -> str:
        return self.key.replace("-", " ")


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


def fields_of(cls: type) -> tuple[FormField, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for attribute in attrs.fields(cls):
        kind, optional = _kind(hints.get(attribute.name, str))
        default = attribute.default
        has_default = default is not attrs.NOTHING
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory() if not default.takes_self else None
        if kind == "json" and default in ({}, [], ()):
            default = None
        out.append(FormField(
            key=attribute.name.replace("_", "-"),
            kind=kind,
            required=not has_default and not optional,
            default=None if isinstance(default, Secret) else default,
        ))
    return tuple(out)


def profile_section(spec: Any) -> FormSection:
    return FormSection(scope=f"profile.{spec.storage_type}", title=spec.storage_type,
                       fields=fields_of(spec.profile_cls), tag={"type": spec.storage_type})


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
                                    fields=fields_of(variant), tag=tag))
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
