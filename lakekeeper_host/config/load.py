"""Structure the raw key space into typed config objects, once, and report what nobody used."""

from __future__ import annotations

import json
import logging
import os
import tomllib
import typing
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.errors import ClassValidationError, IterableValidationError

from lakekeeper_host.config.env import ConfigError, deep_merge, env_name, read_env
from lakekeeper_host.config.model import AuthConfig, HostConfig, PgConfig
from lakekeeper_host.config.types import Secret, parse_duration

log = logging.getLogger(__name__)
C = TypeVar("C")

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _to_bool(value: Any, _: type) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"not a boolean: {value!r} (use true or false)")


def _to_int(value: Any, _: type) -> int:
    if isinstance(value, bool):
        raise ValueError(f"not an integer: {value!r}")
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise ValueError(f"not an integer: {value!r}") from None


def _to_str_tuple(value: Any, _: type) -> tuple[str, ...]:
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    text = str(value).strip()
    if text.startswith("["):
        return tuple(str(v) for v in json.loads(text))
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _json_or_value(value: Any) -> Any:
    if isinstance(value, str) and value.strip()[:1] in ("{", "["):
        return json.loads(value)
    return value


def make_config_converter() -> cattrs.Converter:
    """snake_case converter that accepts strings from the environment for every scalar."""
    conv = cattrs.Converter(forbid_extra_keys=False)
    conv.register_structure_hook(bool, _to_bool)
    conv.register_structure_hook(int, _to_int)
    conv.register_structure_hook(float, lambda v, _: float(v))
    conv.register_structure_hook(str, lambda v, _: v if isinstance(v, str) else str(v))
    conv.register_structure_hook(timedelta, lambda v, _: parse_duration(v))
    conv.register_structure_hook(Secret, lambda v, _: v if isinstance(v, Secret) else Secret(str(v)))
    conv.register_structure_hook_func(lambda t: t == tuple[str, ...], _to_str_tuple)
    conv.register_unstructure_hook(Secret, lambda s: repr(s))
    conv.register_unstructure_hook(timedelta, lambda d: d.total_seconds())

    def dict_hook_factory(cl: type):
        args = typing.get_args(cl)
        value_type = args[1] if len(args) == 2 else Any

        def structure(value: Any, _: type) -> dict:
            value = _json_or_value(value)
            if not isinstance(value, Mapping):
                raise ValueError(f"expected a JSON object, got {value!r}")
            return {str(k): conv.structure(v, value_type) for k, v in value.items()}

        return structure

    conv.register_structure_hook_factory(
        lambda t: typing.get_origin(t) is dict, dict_hook_factory
    )
    # nested sections may arrive as a JSON string (LAKEKEEPER__KV2='{...}')
    def attrs_factory(cl: type):
        inner = cattrs.gen.make_dict_structure_fn(cl, conv)

        def structure(value: Any, _: type):
            value = _json_or_value(value)
            if isinstance(value, str):  # TOML-ish "{url=...,user=...}" compound form
                value = _parse_compound(value)
            return inner(value, cl)

        return structure

    conv.register_structure_hook_factory(attrs.has, attrs_factory)
    return conv


def _parse_compound(text: str) -> dict[str, str]:
    """Lakekeeper's figment compound form: ``{url=http://..., user=..., password=...}``."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise ValueError(f"expected a section, got {text!r}")
    out: dict[str, str] = {}
    for item in body[1:-1].split(","):
        if not item.strip():
            continue
        key, _, value = item.partition("=")
        out[key.strip().lower()] = value.strip().strip('"')
    return out


CONFIG_CONVERTER = make_config_converter()


@attrs.define
class Settings:
    """The structured configuration of one server process.

    ``raw`` is the merged key space; ``section(cls)`` structures another class (plugins use it)
    and remembers which keys were consumed, so leftovers can be reported.
    """

    raw: dict[str, Any] = attrs.field(repr=False)
    host: HostConfig
    pg: PgConfig
    auth: AuthConfig
    consumed: set[str] = attrs.field(factory=set)
    source_file: str | None = None

    def section(self, cls: type[C]) -> C:
        return structure_section(self.raw, cls, self.consumed)

    def unknown_keys(self) -> list[str]:
        return sorted(env_name((k,)) for k in self.raw if k not in self.consumed)

    def report_unknown(self) -> None:
        unknown = self.unknown_keys()
        if not unknown:
            return
        message = "Unknown config key(s): " + ", ".join(unknown)
        if self.host.strict_config:
            raise ConfigError(message + " (LAKEKEEPER__STRICT_CONFIG=true)")
        log.warning(message)

    @property
    def embedded(self) -> bool:
        return not self.pg.uses_postgres

    @property
    def bind_ip(self) -> str:
        if self.host.bind_ip:
            return self.host.bind_ip
        return "127.0.0.1" if self.embedded else "0.0.0.0"


def structure_section(raw: dict[str, Any], cls: type[C], consumed: set[str] | None = None) -> C:
    names = [a.name for a in attrs.fields(cls)]
    data: dict[str, Any] = {}
    for a in attrs.fields(cls):
        if a.name in raw:
            data[a.name] = raw[a.name]
        file_key = f"{a.name}_file"
        if _is_secret(a.type) and file_key in raw:
            path = raw[file_key]
            try:
                data[a.name] = Path(path).read_text().strip()
            except OSError as exc:
                raise ConfigError(f"{env_name((file_key,))}: cannot read {path!r}: {exc}") from exc
            names.append(file_key)
    try:
        result = CONFIG_CONVERTER.structure(data, cls)
    except (ClassValidationError, IterableValidationError, ValueError, TypeError) as exc:
        raise ConfigError(_describe(exc)) from None
    if consumed is not None:
        consumed.update(names)
    return result


def _is_secret(tp: Any) -> bool:
    return tp is Secret or Secret in typing.get_args(tp) or tp in ("Secret", "Secret | None")


def _validator_messages(exc: BaseException, prefix: tuple[str, ...] = ()) -> list[str]:
    """attrs validators raise ``ValueError(msg, attribute, ...)`` inside ``__init__``; name the key."""
    if isinstance(exc, BaseExceptionGroup):
        return [m for sub in exc.exceptions for m in _validator_messages(sub, prefix)]
    args = getattr(exc, "args", ())
    if len(args) >= 2 and isinstance(args[1], attrs.Attribute):
        return [f"{env_name((*prefix, args[1].name))}: {args[0]}"]
    return []


def _describe(exc: BaseException) -> str:
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        from_validators = _validator_messages(exc)
        if from_validators:
            return "; ".join(from_validators)
        messages = []
        for msg in cattrs.transform_error(exc, path="$"):
            text, _, path = msg.rpartition(" @ ")
            parts = tuple(p for p in path.removeprefix("$").split(".") if p)
            parts = tuple(p.split("[")[0] for p in parts)
            messages.append(f"{env_name(parts) if parts else 'config'}: {text}")
        return "; ".join(messages)
    return f"config: {exc}"


def load_settings(
    environ: Mapping[str, str] | None = None,
    config_file: str | os.PathLike | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Settings:
    """Merge file (if any), then environment, then explicit overrides; structure the host parts."""
    environ = os.environ if environ is None else environ
    env_tree = read_env(environ)
    config_file = config_file or env_tree.pop("config_file", None)
    raw: dict[str, Any] = {}
    if config_file:
        try:
            with open(config_file, "rb") as fh:
                file_tree = tomllib.load(fh)
        except OSError as exc:
            raise ConfigError(f"LAKEKEEPER__CONFIG_FILE: cannot read {config_file}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"LAKEKEEPER__CONFIG_FILE: {config_file} is not valid TOML: {exc}") from exc
        raw = _lower_keys(file_tree)
    raw = deep_merge(raw, env_tree)
    if overrides:
        raw = deep_merge(raw, _lower_keys(dict(overrides)))
    consumed: set[str] = set()
    host = structure_section(raw, HostConfig, consumed)
    pg = structure_section(raw, PgConfig, consumed)
    auth = structure_section(raw, AuthConfig, consumed)
    # keys read by the CLI / logging setup rather than a class
    consumed.update({"config_file", "rust_log"})
    return Settings(
        raw=raw,
        host=host,
        pg=pg,
        auth=auth,
        consumed=consumed,
        source_file=str(config_file) if config_file else None,
    )


def _lower_keys(tree: Mapping[str, Any]) -> dict[str, Any]:
    return {
        str(k).lower(): _lower_keys(v) if isinstance(v, Mapping) else v for k, v in tree.items()
    }
