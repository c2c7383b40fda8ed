"""DuckDB with its Iceberg extension, loaded offline, as a second real Iceberg REST client.

DuckDB normally downloads extensions on first use. Our machines reach PyPI only, where the wheels
``duckdb-extension-{iceberg,httpfs,avro}`` carry the extension binaries for exactly one DuckDB
version; we LOAD those files by absolute path and switch automatic install/load off, so nothing
touches the network or ``~/.duckdb``.

As a command (``python -m lakekeeper_host.engines.duckdb_util``) it runs SQL against a catalog, or prints the
``LOAD`` statements for another DuckDB of the same version (``--print-load``).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import duckdb

# iceberg depends on the other two, so they load first.
EXTENSIONS = ("avro", "httpfs", "iceberg")
# the version the `duckdb` extra pins (a plain `pip install duckdb` gives a newer one without extension wheels)
SUPPORTED_DUCKDB = "1.5.5"


class ExtensionNotFound(RuntimeError):
    """An extension wheel matching the installed DuckDB is missing."""


def extension_path(name: str) -> Path:
    """The ``<name>.duckdb_extension`` file from the ``duckdb-extension-<name>`` wheel."""
    import duckdb  # optional dependency

    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    locations = spec.submodule_search_locations if spec and spec.submodule_search_locations else []
    for location in locations:
        candidate = Path(location) / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
        if candidate.is_file():
            return candidate
    raise ExtensionNotFound(
        f"no {name} extension wheel for DuckDB {duckdb.__version__}: the duckdb-extension-* wheels on PyPI pin one "
        f"DuckDB version; install the matching set with pip install 'lakekeeper-host[duckdb]' (in a checkout: "
        f"pip install -e '.[duckdb]'), which brings DuckDB {SUPPORTED_DUCKDB} with its avro, httpfs and iceberg wheels"
    )


def connect_duckdb(database: str = ":memory:", *, config: Mapping[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the iceberg, httpfs and avro extensions loaded from the wheels."""
    import duckdb

    settings = {"autoinstall_known_extensions": False, "autoload_known_extensions": False, **(config or {})}
    connection = duckdb.connect(database, config=settings)
    try:
        for name in EXTENSIONS:
            connection.execute(f"LOAD {_literal(str(extension_path(name)))}")
    except BaseException:
        connection.close()
        raise
    return connection


def attach_catalog(
    con: duckdb.DuckDBPyConnection,
    alias: str,
    endpoint: str,
    warehouse: str,
    token: str | None = None,
    *,
    secret: str | None = None,
    options: Mapping[str, str | bool] | None = None,
) -> None:
    """ATTACH the Iceberg REST catalog at ``endpoint`` (its base, without ``/v1``) as ``alias``.

    Authentication, in order: ``token`` (a bearer token, stored in a secret named
    ``<alias>_token``), ``secret`` (the name of an existing ICEBERG secret, e.g. OAuth2 client
    credentials) or none. ``options`` adds ATTACH options such as
    ``{"ACCESS_DELEGATION_MODE": "none"}``.
    """
    attach: dict[str, str | bool] = {"TYPE": "iceberg", "ENDPOINT": endpoint}
    if token is not None:
        secret = f"{alias}_token"
        con.execute(f"CREATE OR REPLACE SECRET {_identifier(secret)} (TYPE iceberg, TOKEN {_literal(token)})")
    if secret is not None:
        attach["SECRET"] = secret
    else:
        attach["AUTHORIZATION_TYPE"] = "none"
    attach |= dict(options or {})
    rendered = ", ".join(f"{key} {_option_value(key, value)}" for key, value in attach.items())
    con.execute(f"ATTACH {_literal(warehouse)} AS {_identifier(alias)} ({rendered})")


def _option_value(key: str, value: str | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    # TYPE and SECRET take names; everything else is a string.
    return _identifier(value) if key in ("TYPE", "SECRET") else _literal(value)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def install_extensions(extension_directory: str | Path | None = None) -> Path:
    """Copy the extensions of the PyPI wheels to where DuckDB's ``INSTALL`` looks (``~/.duckdb/extensions/
    v<version>/<platform>``, or ``extension_directory``), so that ``INSTALL iceberg; LOAD iceberg;`` works
    offline in any DuckDB of this version; returns the folder."""
    import shutil

    import duckdb

    with duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False}) as con:
        platform = con.execute("PRAGMA platform").fetchone()[0]
        configured = con.sql("SELECT current_setting('extension_directory')").fetchone()[0]
    root = Path(extension_directory or configured or Path.home() / ".duckdb" / "extensions").expanduser()
    target = root / f"v{duckdb.__version__}" / platform
    target.mkdir(parents=True, exist_ok=True)
    for name in EXTENSIONS:
        source = extension_path(name)
        if not (target / source.name).is_file() or (target / source.name).stat().st_size != source.stat().st_size:
            partial = target / f"{source.name}.part"
            shutil.copyfile(source, partial)
            partial.replace(target / source.name)
    return target


def load_statements() -> list[str]:
    """``LOAD '<path>'`` for each extension, for a DuckDB shell of the same version."""
    return [f"LOAD {_literal(str(extension_path(name)))};" for name in EXTENSIONS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m lakekeeper_host.engines.duckdb_util",
        description="DuckDB with the iceberg extension from the PyPI wheels (no download): run SQL against a "
        "Lakekeeper catalog attached as `lakekeeper`",
    )
    parser.add_argument("sql", nargs="*", help="statements to run, in order (default: SHOW ALL TABLES)")
    parser.add_argument("--uri", default="http://127.0.0.1:8181/catalog", help="the catalog's base URI")
    parser.add_argument("--warehouse", default="demo")
    parser.add_argument("--token", help="bearer token for an authenticated catalog")
    parser.add_argument("--print-load", action="store_true", help="print the LOAD statements and exit")
    parser.add_argument("--install-extensions", action="store_true",
                        help="copy the extensions where DuckDB's INSTALL finds them (offline INSTALL iceberg) and exit")
    args = parser.parse_args(argv)
    try:
        if args.print_load:
            print("\n".join(load_statements()))
            return 0
        if args.install_extensions:
            print(f"DuckDB extensions {', '.join(EXTENSIONS)} installed in {install_extensions()}")
            return 0
        con = connect_duckdb()
    except (ExtensionNotFound, ImportError) as exc:
        print(f"duckdb_util: error: {exc}", file=sys.stderr)
        return 2
    with con:
        attach_catalog(con, "lakekeeper", args.uri, args.warehouse, args.token)
        for statement in args.sql or ["SHOW ALL TABLES"]:
            relation = con.sql(statement)
            if relation is not None:
                relation.show()
    return 0


if __name__ == "__main__":
    sys.exit(main())
