"""The wire converter: kebab-case JSON for Lakekeeper's own attrs entities.

Iceberg spec objects (table metadata, updates, requirements) are pyiceberg's pydantic models
and serialise themselves; everything Lakekeeper-specific goes through ``WIRE``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from cattrs.errors import ClassValidationError, IterableValidationError

from lakekeeper_host.errors import CatalogError, bad_request


def kebab(name: str) -> str:
    return name.rstrip("_").replace("_", "-")


def make_wire_converter() -> cattrs.Converter:
    conv = cattrs.Converter(omit_if_default=False, forbid_extra_keys=False)

    def unstructure_factory(cls: type):
        return make_dict_unstructure_fn(
            cls, conv, **{a.name: override(rename=kebab(a.name)) for a in attrs.fields(cls)}
        )

    def structure_factory(cls: type):
        return make_dict_structure_fn(
            cls, conv, **{a.name: override(rename=kebab(a.name)) for a in attrs.fields(cls)}
        )

    conv.register_unstructure_hook_factory(attrs.has, unstructure_factory)
    conv.register_structure_hook_factory(attrs.has, structure_factory)
    conv.register_unstructure_hook(
        datetime, lambda d: d.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")
    )
    conv.register_structure_hook(datetime, lambda v, _: datetime.fromisoformat(v))
    return conv


WIRE = make_wire_converter()


def structure_body(body: Any, cls: type, converter: cattrs.Converter = WIRE) -> Any:
    """Structure a request body; a malformed one is a 400 that names the field."""
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object")
    try:
        return converter.structure(body, cls)
    except (ClassValidationError, IterableValidationError) as exc:
        messages = cattrs.transform_error(exc, path="body")
        raise bad_request("Invalid request body: " + "; ".join(messages)) from None
    except (ValueError, TypeError, KeyError) as exc:
        raise bad_request(f"Invalid request body: {exc}") from None
    except CatalogError:
        raise


def unstructure(obj: Any) -> Any:
    return WIRE.unstructure(obj)
