"""The configuration reference, generated from the config classes themselves.

Walks the host's sections (``HostConfig``, ``PgConfig``, ``AuthConfig``, the catalog features' own
sections) and the ``config_cls`` of every spec a plugin contributes through the plugin manager, and
renders one Markdown table row per ``LAKEKEEPER__`` variable: type, default, an example, who reads it
and the comment written above the field in its class. A comment line ``example: <value>`` gives the
example; booleans and fields with a fixed set of values get one by themselves (the value that is not
the default). A nested section's rows start with the comment above the section's field in its parent.
``python -m lakekeeper_host.runtime.config_reference`` prints
it; ``scripts/gen-config-reference.py`` writes docs/configuration.md.
"""

from __future__ import annotations

import enum
import inspect
import re
import sys
import typing
from collections.abc import Iterable, Iterator
from datetime import timedelta

import attrs
import pluggy

from lakekeeper_host.config.env import env_name
from lakekeeper_host.config.load import ALIASES
from lakekeeper_host.config.model import AuthConfig, HostConfig, PgConfig
from lakekeeper_host.config.types import Secret, format_duration
from lakekeeper_host.server.management import maintenance, tasks
from lakekeeper_host.server.tables import metrics_reports, scan_planning

HOST = "host"
# the hooks whose specs carry a server ``config_cls`` (a task queue's config_cls is its per-warehouse
# queue config, set through the management API; its variable is LAKEKEEPER__TASK_<QUEUE>_WORKERS)
SPEC_HOOKS = (
    "lakekeeper_storage_profiles",
    "lakekeeper_secret_stores",
    "lakekeeper_authorizers",
    "lakekeeper_event_sinks",
    "lakekeeper_contract_checkers",
)
_FIELD_LINE = re.compile(r"^\s+(?P<name>\w+)\s*:")
_COMMENT_LINE = re.compile(r"^\s+#\s?(?P<text>.*)$")
_EXAMPLE = re.compile(r"^example:\s*(?P<value>.+)$")
UNSET = "unset"


@attrs.frozen
class Variable:
    name: str
    type: str
    default: str
    reader: str
    meaning: str
    example: str = ""


@attrs.frozen
class FieldDoc:
    """What the comment above a field says: its meaning and an example value."""

    meaning: str = ""
    example: str = ""


def host_sections() -> list[type]:
    """The classes the host structures from the key space (config/load.py and server startup)."""
    # catalog features read their own sections when first used (runtime/lifecycle.check_backend_selection)
    return [HostConfig, PgConfig, AuthConfig, metrics_reports.Section, scan_planning.Section, maintenance.Section,
            tasks.TaskRuntimeConfig]


def plugin_sections(pm: pluggy.PluginManager, include: Iterable[str] | None = None) -> Iterator[tuple[str, type]]:
    """``(reader, config class)`` for every spec with a ``config_cls``; ``include`` limits the distributions."""
    dists = {id(plugin): dist.project_name for plugin, dist in pm.list_plugin_distinfo()}
    wanted = set(include) if include is not None else None
    seen: set[type] = set()
    for hook_name in SPEC_HOOKS:
        for impl in getattr(pm.hook, hook_name).get_hookimpls():
            reader = _reader(pm, impl.plugin, dists)
            if reader is None or (wanted is not None and reader not in wanted and not reader.startswith(HOST)):
                continue
            for spec in impl.function() or []:
                config_cls = getattr(spec, "config_cls", None)
                if config_cls is None or config_cls in seen:
                    continue
                seen.add(config_cls)
                yield reader, config_cls


def task_queue_variables(pm: pluggy.PluginManager, include: Iterable[str] | None = None) -> Iterator[Variable]:
    dists = {id(plugin): dist.project_name for plugin, dist in pm.list_plugin_distinfo()}
    for impl in pm.hook.lakekeeper_task_queues.get_hookimpls():
        reader = _reader(pm, impl.plugin, dists)
        if reader is None or (include is not None and reader not in include and not reader.startswith(HOST)):
            continue
        for spec in impl.function() or []:
            if any(f.name.endswith(f"{spec.name}_workers") for f in attrs.fields(HostConfig)):
                continue  # a built-in queue with its own HostConfig key
            yield Variable(env_name((f"task_{spec.name}_workers",)), "int", str(spec.default_workers), reader,
                           f"workers per process for the `{spec.name}` task queue (0: none)", example="0")


def _reader(pm: pluggy.PluginManager, plugin: object, dists: dict[int, str]) -> str | None:
    """The distribution of a plugin, or ``host (builtins.x)`` for a built-in one."""
    if id(plugin) in dists:
        return dists[id(plugin)]
    name = pm.get_name(plugin) or ""
    return f"{HOST} ({name.removeprefix('lakekeeper_host.')})" if name.startswith("lakekeeper_host.") else None


def field_comments(cls: type) -> dict[str, FieldDoc]:
    """The ``# ...`` lines written directly above each field in the class body."""
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return {}
    comments: dict[str, FieldDoc] = {}
    pending: list[str] = []
    for line in lines[1:]:
        if comment := _COMMENT_LINE.match(line):
            pending.append(comment["text"].strip())
        elif field := _FIELD_LINE.match(line):
            if pending:
                examples = [m["value"].strip() for text in pending if (m := _EXAMPLE.match(text))]
                meaning = " ".join(text for text in pending if not _EXAMPLE.match(text))
                comments[field["name"]] = FieldDoc(meaning, examples[0] if examples else "")
            pending = []
        else:
            pending = []
    return comments


def variables(cls: type, reader: str, prefix: tuple[str, ...] = (), defaults: object = None,
              context: str = "") -> Iterator[Variable]:
    """The variables of ``cls``; ``defaults`` is the instance a parent section uses as its default,
    ``context`` the parent's comment on the section (it starts each row's meaning)."""
    comments = field_comments(cls)
    for field in attrs.fields(attrs.resolve_types(cls)):
        path = (*prefix, field.name)
        default = getattr(defaults, field.name) if defaults is not None else _default(field)
        doc = comments.get(field.name, FieldDoc())
        if attrs.has(field.type) and not _is_secret(field.type):
            yield from variables(field.type, reader, path, default if default is not attrs.NOTHING else None,
                                 _joined(context, doc.meaning))
            continue
        value_type = _dict_value_type(field.type)
        if value_type is not None and attrs.has(value_type):
            yield from variables(value_type, reader, (*path, "<name>"), context=_joined(context, doc.meaning))
            continue
        meaning = _joined(context, doc.meaning) if doc.meaning else ""
        yield Variable(env_name(path), _type_name(field.type), _render(default) or UNSET, reader, meaning,
                       doc.example or _implied_example(field, default))
        if _is_secret(field.type):
            yield Variable(env_name((*path[:-1], f"{field.name}_file")), "path", UNSET, reader,
                           f"file holding {env_name(path)} (read once at startup)",
                           f"/run/secrets/{field.name}")


def _joined(context: str, meaning: str) -> str:
    return f"{context}: {meaning}" if context and meaning else context or meaning


def _implied_example(field: attrs.Attribute, default: object) -> str:
    """An example a field's type makes obvious: the other boolean, or a value of a fixed set that is not
    the default. Anything else needs an ``example:`` comment."""
    if field.type is bool or field.type == "bool":
        return "false" if default is True else "true"
    choices: tuple = ()
    if typing.get_origin(field.type) is typing.Literal:
        choices = typing.get_args(field.type)
    validator = field.validator
    inner = getattr(validator, "options", None)
    if inner is not None:
        choices = tuple(inner)
    others = [str(c) for c in choices if c != default]
    return others[0] if others else ""


def alias_variables(rows: dict[str, Variable]) -> Iterator[Variable]:
    """Lakekeeper's other names for keys (config/load.py ``ALIASES``), documented next to the key."""
    for alias, key in ALIASES:
        target = rows.get(env_name(key))
        if target is None:
            continue
        yield attrs.evolve(target, name=env_name(alias),
                           meaning=f"Lakekeeper's other name for {target.name} (which wins when both are set)")


def reference_rows(pm: pluggy.PluginManager, include: Iterable[str] | None = None) -> list[Variable]:
    rows: list[Variable] = []
    for cls in host_sections():
        rows.extend(variables(cls, HOST))
    for reader, cls in plugin_sections(pm, include):
        rows.extend(variables(cls, reader))
    rows.extend(task_queue_variables(pm, include))
    rows.extend(alias_variables({row.name: row for row in rows}))
    unique: dict[str, Variable] = {}
    for row in rows:  # a plugin may read a host key too (ENABLE_AWS_SYSTEM_CREDENTIALS): name both readers
        known = unique.get(row.name)
        if known is not None and known.reader != row.reader and not (
            known.reader.startswith(HOST) and row.reader.startswith(HOST)
        ):
            first = unique[row.name]
            unique[row.name] = attrs.evolve(first, reader=f"{first.reader}, {row.reader}",
                                            meaning=first.meaning or row.meaning,
                                            example=first.example or row.example)
        else:
            unique.setdefault(row.name, row)
    return sorted(unique.values(), key=lambda v: v.name)


def render_markdown(rows: list[Variable]) -> str:
    header = [
        "# Configuration reference",
        "",
        "<!-- generated by scripts/gen-config-reference.py from the config classes; do not edit by hand -->",
        "",
        "Every variable the host and the plugins in `plugins/` read, generated from their config classes. Set them in",
        "the environment (`LAKEKEEPER__` prefix, `__` separates sections) or as lower-case keys in a TOML file",
        "(`lakekeeper --config file.toml serve`; nested sections as tables). Variables of type `Secret` can also be",
        "given as a file (`<NAME>_FILE`). Durations accept `30s`, `5m`, ISO 8601 (`PT30M`) or seconds; lists accept",
        "`a,b` or a JSON array. *Read by* says who reads the variable: `host` or the plugin's distribution.",
        "`RUST_LOG` (without prefix) is read too, as Lakekeeper's compose files set it (see `LAKEKEEPER__RUST_LOG`).",
        "",
        "| variable | type | default | example | read by | meaning |",
        "|---|---|---|---|---|---|",
    ]
    body = []
    for row in rows:
        default = "unset" if row.default == UNSET else f"`{row.default}`"
        example = f"`{row.example}`" if row.example else ""
        meaning = row.meaning.replace("|", "\\|")
        body.append(f"| `{row.name}` | {row.type} | {default} | {example} | {row.reader} | {meaning} |")
    return "\n".join(header + body + LIMITS) + "\n"


LIMITS = [
    "",
    "## Listening address and request limits",
    "",
    "- **Bind address**: `LAKEKEEPER__BIND_IP` unset listens on `127.0.0.1` (this machine only) for the embedded",
    "  default and on `0.0.0.0` (every interface) when a PostgreSQL URL is configured; the API port is",
    "  `LAKEKEEPER__LISTEN_PORT` (8181), Prometheus metrics `LAKEKEEPER__METRICS__PORT` (9000) on the same address.",
    "- **Body size**: a body above `LAKEKEEPER__MAX_REQUEST_BODY_SIZE` (32 MiB) is answered `413`",
    "  `RequestEntityTooLarge` (an Iceberg ErrorModel) on every route: at once when its `Content-Length` says so,",
    "  while it is read when it is sent chunked.",
    "- **JSON nesting**: a body nested deeper than 256 arrays/objects is a `400 BadRequestException`.",
    "- **Page sizes**: `pageSize` is clamped to `[1, LAKEKEEPER__PAGINATION_SIZE_MAX]` (Lakekeeper's semantics, so",
    "  `0`, negative and huge values are valid); a value that is not an integer is a `400`.",
    "- **Slow clients**: a request whose body has not arrived (or whose handling has not finished) within",
    "  `LAKEKEEPER__MAX_REQUEST_TIME` (30 s) is answered `408 RequestTimeout`; a connection that has not completed",
    "  its request headers within `LAKEKEEPER__HTTP_KEEP_ALIVE_TIMEOUT` (75 s) is closed without an answer.",
]


def _default(field: attrs.Attribute):
    if field.default is attrs.NOTHING:
        return attrs.NOTHING
    if isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
        return field.default.factory()
    return field.default


def _render(value) -> str:
    if value is attrs.NOTHING or value is None:
        return ""
    if isinstance(value, Secret):
        return "(a built-in value: unsafe)" if value.get() else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    if isinstance(value, dict):
        return "" if not value else str(value)
    return str(value)


def _type_name(tp) -> str:
    text = getattr(tp, "__name__", None) if isinstance(tp, type) else None
    text = text or str(tp).replace("typing.", "")
    text = text.replace("lakekeeper_host.config.types.", "").replace("datetime.", "").replace("NoneType", "None")
    text = text.replace("timedelta", "duration").replace("tuple[str, ...]", "list of str")
    return text.replace(" | None", "").replace("|", "or")


def _dict_value_type(tp):
    import typing

    if typing.get_origin(tp) is dict:
        args = typing.get_args(tp)
        return args[1] if len(args) == 2 else None
    return None


def _is_secret(tp) -> bool:
    import typing

    return tp is Secret or Secret in typing.get_args(tp)


def main(argv: list[str] | None = None) -> int:
    from lakekeeper_host.plugins import make_plugin_manager

    sys.stdout.write(render_markdown(reference_rows(make_plugin_manager())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
