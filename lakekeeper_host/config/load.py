"""Structure the raw key space into typed config objects, once, and report what nobody used."""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
import tomllib
import typing
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import attrs
import cattrs
from cattrs.errors import AttributeValidationNote, ClassValidationError, IterableValidationError

from lakekeeper_host.config.env import ConfigError, deep_merge, env_name, misspelled_prefixes, read_env
from lakekeeper_host.config.model import AuthConfig, HostConfig, PgConfig
from lakekeeper_host.config.types import Secret, parse_duration

log = logging.getLogger(__name__)
C = TypeVar("C")

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _unquoted(text: str) -> str:
    """``"2"`` as Lakekeeper's compose files write some values (figment reads them as 2)."""
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] == '"' else text


def _to_bool(value: Any, _: type) -> bool:
    if isinstance(value, bool):
        return value
    text = _unquoted(str(value).strip()).lower()
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
        return int(_unquoted(str(value).strip()))
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
        # a nested section whose default is an instance of its own (CACHE__SECRETS: 500 entries, 600 s)
        # keeps that instance's values for the keys a partial setting leaves out
        section_defaults = {
            a.name: a.default for a in attrs.fields(cl)
            if a.default is not attrs.NOTHING and attrs.has(type(a.default))
        }

        def structure(value: Any, _: type):
            if isinstance(value, cl):
                return value
            value = _json_or_value(value)
            if isinstance(value, str):  # TOML-ish "{url=...,user=...}" compound form
                value = parse_compound(value)
            if section_defaults and isinstance(value, Mapping):
                value = dict(value)
                for name, default in section_defaults.items():
                    given = _json_or_value(value.get(name))
                    if isinstance(given, Mapping):
                        inherited = {a.name: getattr(default, a.name) for a in attrs.fields(type(default))}
                        value[name] = inherited | dict(given)
            return inner(value, cl)

        return structure

    conv.register_structure_hook_factory(attrs.has, attrs_factory)
    return conv


def parse_compound(text: str) -> dict[str, str]:
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
    _sections: dict[type, Any] = attrs.field(factory=dict, repr=False)
    # (variable, intended key path, certain) for LAKEKEPER__X, LAKEKEEPER_X, ... (env.misspelled_prefixes)
    misspelled: list[tuple[str, tuple[str, ...], bool]] = attrs.field(factory=list)
    # key paths inside sections that some class reads, and the sections (attrs classes) read from a table
    nested: NestedKeys = attrs.field(factory=lambda: NestedKeys())
    # `serve --force-start`: start even on a database migrated by a newer version (set by the CLI, not a key)
    force_start: bool = False
    _reported: bool = attrs.field(default=False, init=False, repr=False)

    def section(self, cls: type[C]) -> C:
        """The configuration section ``cls``, structured once per process and then remembered."""
        if cls not in self._sections:
            self._sections[cls] = structure_section(self.raw, cls, self.consumed, self.nested)
        return self._sections[cls]

    def unknown_keys(self) -> list[str]:
        return sorted(env_name((k,)) for k in self.raw if k not in self.consumed)

    def config_problems(self) -> list[str]:
        """One line per key nobody reads, with the key it probably meant. Call after every section is read."""
        known = sorted(self.consumed - SILENT_KEYS)

        def did_you_mean(key: str) -> str:
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
            return f" (did you mean {env_name((close[0],))}?)" if close else ""

        problems = [f"Unknown config key {env_name((k,))}{did_you_mean(k)}" for k in sorted(self.raw)
                    if k not in self.consumed]
        problems += self.nested.unknown(self.raw)
        for variable, path, certain in self.misspelled:
            if certain or (path and path[0] in self.consumed):
                problems.append(f"Ignored variable {variable} (did you mean {env_name(path)}?)")
        return problems

    def report_unknown(self) -> None:
        """Warn once per unknown key (or fail under STRICT_CONFIG); later calls say nothing again."""
        if self._reported:
            return
        problems = self.config_problems()
        if problems and self.host.strict_config:
            raise ConfigError("; ".join(problems) + " (LAKEKEEPER__STRICT_CONFIG=true)")
        self._reported = True
        for problem in problems:
            log.warning(problem)

    @property
    def embedded(self) -> bool:
        return not self.pg.uses_postgres

    @property
    def embedded_database_file(self) -> str | None:
        """The absolute path of the embedded SQLite database; None when the catalog runs on PostgreSQL."""
        if self.pg.uses_postgres:
            return None
        return os.path.abspath(self.pg.sqlite_path or os.path.join(self.host.data_dir, "catalog.sqlite"))

    @property
    def bind_ip(self) -> str:
        if self.host.bind_ip:
            return self.host.bind_ip
        return "127.0.0.1" if self.embedded else "0.0.0.0"

    @property
    def own_base_uri(self) -> str:
        """Where this server is reached from its own host: ``LAKEKEEPER__BASE_URI`` or the listen address."""
        host = "127.0.0.1" if self.bind_ip in ("0.0.0.0", "::") else self.bind_ip
        return (self.host.base_uri or f"http://{host}:{self.host.listen_port}").rstrip("/")


@attrs.define
class NestedKeys:
    """Which keys inside sections are read, so ``LAKEKEEPER__CACHE__ROLE__X`` is reported like a top-level key."""

    known: set[tuple[str, ...]] = attrs.field(factory=set)
    sections: set[tuple[str, ...]] = attrs.field(factory=set)

    def record(self, tp: Any, value: Any, path: tuple[str, ...]) -> None:
        """``value`` (raw) read as ``tp`` at ``path``: remember its keys the class knows."""
        if isinstance(tp, type) and attrs.has(tp) and isinstance(value, Mapping):
            self.sections.add(path)
            for field in attrs.fields(attrs.resolve_types(tp)):
                self.known.add((*path, field.name))
                if field.name in value:
                    self.record(field.type, value[field.name], (*path, field.name))
        elif typing.get_origin(tp) is dict and isinstance(value, Mapping):
            value_type = typing.get_args(tp)[1] if len(typing.get_args(tp)) == 2 else Any
            for name, item in value.items():  # names chosen by the operator (OPENID_PROVIDERS__<NAME>)
                self.known.add((*path, str(name)))
                self.record(value_type, item, (*path, str(name)))

    def unknown(self, raw: Mapping[str, Any]) -> list[str]:
        problems = []
        for section in sorted(self.sections):
            node: Any = raw
            for part in section:
                node = node.get(part) if isinstance(node, Mapping) else None
            if not isinstance(node, Mapping):
                continue
            siblings = sorted(path[-1] for path in self.known if path[:-1] == section)
            for key in sorted(node):
                if (*section, key) in self.known:
                    continue
                close = difflib.get_close_matches(key, siblings, n=1, cutoff=0.75)
                hint = f" (did you mean {env_name((*section, close[0]))}?)" if close else ""
                problems.append(f"Unknown config key {env_name((*section, key))}{hint}")
        return problems


def structure_section(raw: dict[str, Any], cls: type[C], consumed: set[str] | None = None,
                      nested: NestedKeys | None = None) -> C:
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
    if nested is not None:
        for field in attrs.fields(attrs.resolve_types(cls)):
            if field.name in data:
                nested.record(field.type, data[field.name], (field.name,))
    return result


def _is_secret(tp: Any) -> bool:
    return tp is Secret or Secret in typing.get_args(tp) or tp in ("Secret", "Secret | None")


# attrs' comparison validators (ge, le, ...) raise ValueError("'name' must be >= 1: 0") without the attribute
_COMPARISON_MESSAGE = re.compile(r"^'(?P<name>\w+)' (?P<reason>must be .*)$")


def _validator_messages(exc: BaseException, prefix: tuple[str, ...] = ()) -> list[str]:
    """attrs validators raise ``ValueError(msg, attribute, ...)`` inside ``__init__``; name the key.

    A nested section's errors arrive in a group noted with the attribute that holds the section.
    """
    notes = getattr(exc, "__notes__", ())
    for note in notes:
        if isinstance(note, AttributeValidationNote):
            prefix = (*prefix, note.name)
    if isinstance(exc, BaseExceptionGroup):
        return [m for sub in exc.exceptions for m in _validator_messages(sub, prefix)]
    args = getattr(exc, "args", ())
    if len(args) == 1 and isinstance(args[0], str) and args[0].startswith("LAKEKEEPER__"):
        return [args[0]]  # a check across fields (``__attrs_post_init__``) that names its variable itself
    if len(args) >= 2 and isinstance(args[1], attrs.Attribute):
        return [f"{env_name((*prefix, args[1].name))}: {args[0]}"]
    if len(args) == 1 and isinstance(args[0], str) and (match := _COMPARISON_MESSAGE.match(args[0])):
        return [f"{env_name((*prefix, match['name']))}: {match['reason']}"]
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
    if environ.get("RUST_LOG") and "rust_log" not in env_tree:  # as Lakekeeper's compose files set it
        env_tree["rust_log"] = environ["RUST_LOG"]
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
    raw = apply_aliases(raw)
    consumed: set[str] = set()
    nested = NestedKeys()
    host = structure_section(raw, HostConfig, consumed, nested)
    pg = structure_section(raw, PgConfig, consumed, nested)
    auth = structure_section(raw, AuthConfig, consumed, nested)
    consumed.update(SILENT_KEYS)
    if host.require_postgres and not pg.uses_postgres:
        raise ConfigError(_missing_postgres_message(config_file))
    if host.require_authentication and not auth.enabled:
        origin = f" (set in {config_file})" if config_file else ""
        raise ConfigError(
            "No authentication is configured, but LAKEKEEPER__REQUIRE_AUTHENTICATION=true" + origin
            + " forbids an unauthenticated catalog: set LAKEKEEPER__OPENID_PROVIDER_URI (and"
            " LAKEKEEPER__OPENID_AUDIENCE) or LAKEKEEPER__ENABLE_KUBERNETES_AUTHENTICATION=true"
        )
    if not pg.uses_postgres:
        _refuse_misspelled_database(raw, consumed)
    return Settings(
        raw=raw,
        host=host,
        pg=pg,
        auth=auth,
        consumed=consumed,
        source_file=str(config_file) if config_file else None,
        misspelled=misspelled_prefixes(environ),
        nested=nested,
    )


# keys nothing structures but nobody should be warned about: the config file's own variable, and the
# placeholder Lakekeeper's Helm chart adds to every pod's environment
SILENT_KEYS = frozenset({"config_file", "placeholder"})

# Lakekeeper's other names for a key: (alias, the key it sets). The key itself wins when both are set.
ALIASES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("metrics_port",), ("metrics", "port")),
    (("task_tabular_expiration_workers",), ("task_soft_deletion_workers",)),
)


def apply_aliases(raw: dict[str, Any]) -> dict[str, Any]:
    """Move each alias's value to the key it stands for (unless that key is set too)."""
    merged = dict(raw)
    for alias, key in ALIASES:
        if alias[0] not in merged:
            continue
        value = merged.pop(alias[0])
        node = merged
        for part in key[:-1]:
            child = node.get(part)
            child = dict(child) if isinstance(child, Mapping) else {}
            node[part] = child
            node = child
        node.setdefault(key[-1], value)
    return merged


_DATABASE_KEYS = ("pg_database_url_write", "pg_database_url_read", "pg_host_w", "pg_host_r")


def _refuse_misspelled_database(raw: Mapping[str, Any], consumed: set[str]) -> None:
    """A PostgreSQL variable with a typo must not leave the server quietly on the embedded SQLite."""
    for key in sorted(raw):
        if key in consumed or not key.startswith("pg_"):
            continue
        # a cut-short name (PG_DATABASE_URL) means the write URL, the one a database needs
        close = [k for k in _DATABASE_KEYS if k.startswith(key)] or difflib.get_close_matches(
            key, _DATABASE_KEYS, n=1, cutoff=0.75)
        if close:
            raise ConfigError(
                f"{env_name((key,))} is not a variable this server reads (did you mean {env_name((close[0],))}?); "
                "with no PostgreSQL configured the server would run on the embedded SQLite instead"
            )


def _missing_postgres_message(config_file: str | os.PathLike | None) -> str:
    origin = f" (set in {config_file})" if config_file else ""
    return (
        "LAKEKEEPER__PG_DATABASE_URL_WRITE is not set, but LAKEKEEPER__REQUIRE_POSTGRES=true" + origin
        + " forbids the embedded SQLite: set LAKEKEEPER__PG_DATABASE_URL_WRITE=postgresql://user:password@host:5432/db"
        " (or LAKEKEEPER__PG_HOST_W and LAKEKEEPER__PG_DATABASE)"
    )


def _lower_keys(tree: Mapping[str, Any]) -> dict[str, Any]:
    return {
        str(k).lower(): _lower_keys(v) if isinstance(v, Mapping) else v for k, v in tree.items()
    }
