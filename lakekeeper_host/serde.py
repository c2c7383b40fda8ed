"""The wire converter: kebab-case JSON for Lakekeeper's own attrs entities.

Iceberg spec objects (table metadata, updates, requirements) are pyiceberg's pydantic models
and serialise themselves; everything Lakekeeper-specific goes through ``WIRE``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import attrs
import cattrs
import cattrs.v
from cattrs.errors import ClassValidationError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from lakekeeper_host.errors import CatalogError, bad_request


def kebab(name: str) -> str:
    return name.rstrip("_").replace("_", "-")


def _strict(expected: type, *also: type):
    """JSON scalars must already have the right type: no ``bool("yes")`` or ``int("3")`` coercion."""
    accepted = (expected, *also)

    def structure(value: Any, _: type) -> Any:
        if isinstance(value, bool) and expected is not bool:
            raise ValueError(f"expected {expected.__name__}, got a boolean")
        if not isinstance(value, accepted):
            raise ValueError(f"expected {expected.__name__}, got {type(value).__name__}")
        return expected(value)

    return structure


def make_wire_converter() -> cattrs.Converter:
    conv = cattrs.Converter(omit_if_default=False, forbid_extra_keys=False)
    conv.register_structure_hook(bool, _strict(bool))
    conv.register_structure_hook(int, _strict(int))
    conv.register_structure_hook(float, _strict(float, int))
    conv.register_structure_hook(str, _strict(str))

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
        datetime, lambda d: d.astimezone(UTC).isoformat().replace("+00:00", "Z")
    )
    conv.register_structure_hook(datetime, lambda v, _: datetime.fromisoformat(v))
    return conv


WIRE = make_wire_converter()


def structure_body(body: Any, cls: type, converter: cattrs.Converter = WIRE, *, path: str = "body") -> Any:
    """Structure a request body; a malformed one is a 400 that names the field (``path`` is what the
    client calls the object: ``body`` for a whole request, ``storage-profile`` for a nested one)."""
    if not isinstance(body, dict):
        raise bad_request("Request body must be a JSON object" if path == "body" else f"{path} must be a JSON object")
    try:
        return converter.structure(body, cls)
    except (ClassValidationError, IterableValidationError) as exc:
        own = _catalog_error(exc)
        if own is not None:  # a validator's own 400 already names its field and reason
            raise own from None
        messages = [_wire_path(m) for m in cattrs.transform_error(exc, path=path, format_exception=_reason)]
        raise bad_request("Invalid request body: " + "; ".join(messages)) from None
    except (ValueError, TypeError, KeyError) as exc:
        raise bad_request(f"Invalid request body: {exc} @ {path}") from None
    except CatalogError:
        raise


def _catalog_error(exc: BaseException) -> CatalogError | None:
    if isinstance(exc, CatalogError):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _catalog_error(inner)
        if found is not None:
            return found
    return None


def _reason(exc: BaseException, type_: type | None) -> str:
    """cattrs' wording, but a strict scalar hook's own reason (``expected int, got str``) is kept."""
    if type(exc) is ValueError and exc.args and isinstance(exc.args[0], str) and exc.args[0].startswith("expected "):
        return exc.args[0]
    return cattrs.v.format_exception(exc, type_)


def _wire_path(message: str) -> str:
    """``... @ body.accept_terms_of_use`` -> ``... @ body.accept-terms-of-use`` (the key the client sent)."""
    text, sep, path = message.rpartition(" @ ")
    return f"{text}{sep}{kebab(path)}" if sep else message


def unstructure(obj: Any) -> Any:
    return WIRE.unstructure(obj)


def iso_timestamp(ms: int | None, timespec: str = "auto") -> str | None:
    """Epoch milliseconds as the RFC 3339 UTC text the APIs answer with (``...Z``); None stays None."""
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec=timespec).replace("+00:00", "Z")
