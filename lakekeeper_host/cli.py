"""``lakekeeper serve | migrate | wait-for-db | healthcheck | management-openapi | openfga reconcile |
reopen-bootstrap | version`` with Lakekeeper's flags (its Helm chart runs ``wait-for-db -dm -r 100 -b 2``),
and this server's own ``plugins | maintain | rotate-encryption-key | authz reconcile | generic-table-openapi``.

Errors are one clear line and a non-zero exit code, never a traceback: 2 for a configuration or
startup problem (the line names the variable), 1 when a check or an operation failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import socket
import sys
import time
from collections.abc import Sequence

from lakekeeper_host import __version__
from lakekeeper_host.config import ConfigError, Settings, load_settings
from lakekeeper_host.registry import Registry, StartupError
from lakekeeper_host.runtime.logs import setup_logging
from lakekeeper_host.store.migrate import MigrationError

log = logging.getLogger("lakekeeper")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakekeeper", description="Lakekeeper Iceberg REST catalog")
    parser.add_argument("--config", help="TOML config file (also LAKEKEEPER__CONFIG_FILE)")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the catalog server")
    serve.add_argument("--migrate", action="store_true", help="apply pending migrations before serving")
    serve.add_argument("-f", "--force-start", action="store_true",
                       help="start even on a database migrated by a newer version, or with pending migrations "
                            "(warnings instead of refusals; an emergency rollback, at your own risk)")
    sub.add_parser("migrate", help="apply database migrations (idempotent)")
    wait = sub.add_parser("wait-for-db", help="wait until the database accepts connections (and is migrated: -m)")
    wait.add_argument("-d", "--check-db", action="store_true",
                      help="wait until the database accepts connections (also without any flag)")
    wait.add_argument("-m", "--check-migrations", action="store_true",
                      help="also wait until it is migrated (implies -d); a database newer than this server "
                           "fails at once")
    wait.add_argument("-r", "--retries", type=int, default=15, help="attempts after the first (default 15)")
    wait.add_argument("-b", "--backoff", type=float, default=2.0, help="seconds between attempts (default 2)")
    health = sub.add_parser("healthcheck",
                            help="check a running server's /health (-s, the default) and the database (-d)")
    health.add_argument("-a", "--all", action="store_true", help="check the database and the server (-d and -s)")
    health.add_argument("-d", "--db", action="store_true", help="check that the database accepts connections")
    health.add_argument("-s", "--server", action="store_true",
                        help="check the server's /health on 127.0.0.1:<LISTEN_PORT> (or --url)")
    health.add_argument("--url", help="base URL (default http://127.0.0.1:<LISTEN_PORT>)")
    sub.add_parser("management-openapi", help="print the Management API's OpenAPI document (YAML)")
    reopen = sub.add_parser(
        "reopen-bootstrap",
        help="let POST /management/v1/bootstrap be called again (after switching authorizers); keeps the server id "
             "and every catalog object",
    )
    reopen.add_argument("-y", "--yes", action="store_true", help="required confirmation")
    openfga = sub.add_parser("openfga", help="OpenFGA maintenance (LAKEKEEPER__AUTHZ_BACKEND=openfga)")
    openfga_sub = openfga.add_subparsers(dest="openfga_command", required=True)
    openfga_reconcile = openfga_sub.add_parser(
        "reconcile", help="write OpenFGA's missing hierarchy tuples from the catalog (and delete drift)"
    )
    openfga_reconcile.add_argument(
        "--mode", choices=RECONCILE_MODES, default="add-missing",
        help="add-missing (default) only writes; add-and-delete-drift also deletes the structural tuples and the "
             "tuples of deleted objects the catalog contradicts",
    )
    openfga_reconcile.add_argument("--dry-run", action="store_true", help="only report what would change")
    sub.add_parser("plugins", help="list installed plugins and what they provide")
    rotate = sub.add_parser(
        "rotate-encryption-key", help="re-encrypt every stored secret under a new LAKEKEEPER__PG_ENCRYPTION_KEY"
    )
    new_key = rotate.add_mutually_exclusive_group(required=True)
    new_key.add_argument("--new-key", help="the new key (prefer --new-key-file: arguments are visible to ps)")
    new_key.add_argument("--new-key-file", help="read the new key from this file ('-' for stdin)")
    maintain = sub.add_parser(
        "maintain",
        help="run table maintenance now (through a server's task queue, or directly on Spark with --catalog-uri)",
    )
    maintain.add_argument("--warehouse", required=True, help="warehouse name (or id, through a server)")
    maintain.add_argument("--table", action="append", help="namespace.table or a table id (repeatable; default: all)")
    maintain.add_argument("--server", help="server base URL (default http://127.0.0.1:<LISTEN_PORT>)")
    maintain.add_argument("--project-id", help="project of the warehouse (x-project-id)")
    maintain.add_argument("--token", help="bearer token for the server or catalog")
    maintain.add_argument("--no-wait", action="store_true", help="schedule the tasks and print their ids")
    maintain.add_argument("--timeout", type=float, default=3600, help="seconds to wait for the tasks")
    maintain.add_argument("--catalog-uri", help="run the Spark job here against this Iceberg REST catalog URI")
    maintain.add_argument("--credential", help="OAuth2 client_id:client_secret for the catalog (direct)")
    maintain.add_argument("--oauth2-server-uri", help="token endpoint for --credential (direct)")
    maintain.add_argument("--scope", help="OAuth2 scope for --credential (direct)")
    maintain.add_argument("--master", help="Spark master URL (direct; default local[*])")
    maintain.add_argument("--jars-mode", choices=("auto", "offline", "online"), default="auto")
    maintain.add_argument("--conf", action="append", help="extra Spark setting key=value (direct, repeatable)")
    maintain.add_argument("--policy", help="partial maintenance policy JSON, as the management API takes (direct)")
    maintain.add_argument("--json", action="store_true", help="print the results as JSON")
    authz = sub.add_parser("authz", help="operator tasks on the configured authorizer")
    authz_sub = authz.add_subparsers(dest="authz_command", required=True)
    reconcile = authz_sub.add_parser(
        "reconcile",
        help="write the authorizer's missing hierarchy records and delete those of objects the database no longer has",
    )
    reconcile.add_argument("--dry-run", action="store_true", help="only report what would change")
    reconcile.add_argument("--mode", choices=RECONCILE_MODES, default="add-and-delete-drift",
                           help="add-and-delete-drift (default here) or add-missing, as `openfga reconcile`")
    sub.add_parser(
        "generic-table-openapi",
        help="print the OpenAPI document of the Generic Table API (/lakekeeper/v1), as JSON (which is also YAML)",
    )
    sub.add_parser("version", help="print the version")
    return parser


RECONCILE_MODES = ("add-missing", "add-and-delete-drift")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "version":
        print(__version__)
        return 0
    if args.command == "healthcheck" and args.all and (args.db or args.server):
        parser.error("healthcheck: -a includes -d and -s; give either -a or -d/-s")
    try:
        settings = load_settings(config_file=args.config)
        setup_logging(settings)
        command = args.command
        if command is None:  # as Lakekeeper: serve only when DEBUG__AUTO_SERVE says so
            if not settings.host.debug.auto_serve:
                print("lakekeeper: error: no command given: `lakekeeper serve` runs the server (`lakekeeper --help` "
                      "lists the others; LAKEKEEPER__DEBUG__AUTO_SERVE=true serves without one)", file=sys.stderr)
                return 2
            command = "serve"
            args = parser.parse_args([*(["--config", args.config] if args.config else []), "serve", "--force-start"])
        handler = COMMANDS[command]
        return handler(settings, args) or 0
    except (ConfigError, StartupError, MigrationError) as exc:
        print(f"lakekeeper: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one line for the operator; details at debug level
        log.debug("command failed", exc_info=True)
        print(f"lakekeeper: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


def _plugin_manager(settings: Settings):
    from lakekeeper_host.plugins import make_plugin_manager

    return make_plugin_manager(disabled=settings.host.disabled_plugins, trace=settings.host.trace_plugins)


def cmd_serve(settings: Settings, args) -> int:
    from lakekeeper_host.runtime.serve import serve

    if args.migrate:
        settings = load_settings(config_file=args.config, overrides={"debug": {"migrate_before_serve": "true"}})
    settings.force_start = args.force_start
    ensure_can_listen(settings.bind_ip, settings.host.listen_port)
    from lakekeeper_host.service.endpoints import EndpointPolicy

    EndpointPolicy.from_settings(settings.host)  # an invalid pattern: one line now, not a failed startup
    return serve(settings, _plugin_manager(settings))


def ensure_can_listen(host: str, port: int) -> None:
    """Bind (and release) the listen address now, so a taken port is one line naming it, before any banner.

    hypercorn binds with SO_REUSEADDR too, so this fails exactly when hypercorn would.
    """
    if port == 0:
        return
    shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            f"cannot listen on {shown}: {reason} (LAKEKEEPER__BIND_IP / LAKEKEEPER__LISTEN_PORT)"
        ) from None


def cmd_migrate(settings: Settings, args) -> int:
    from lakekeeper_host.store import Store
    from lakekeeper_host.store.migrate import migrate

    async def run() -> None:
        store = Store.from_settings(settings)
        await store.connect()
        try:
            applied = await migrate(store)
        finally:
            await store.disconnect()
        if applied:
            print("applied: " + ", ".join(f"{m.version:04d}_{m.name}" for m in applied))
        else:
            print("database is up to date")
        await migrate_selected_backends(settings)

    asyncio.run(run())
    return 0


async def migrate_selected_backends(settings: Settings) -> None:
    """The selected authorizer's and secret store's own migrations (OpenFGA: store and model)."""
    from lakekeeper_host.registry import BuildContext, Registry

    registry = Registry.collect(_plugin_manager(settings))
    for spec in (registry.authorizer(settings.host.authz_backend), registry.secret_store(settings.host.secret_backend)):
        if spec.migrate is None:
            continue
        config = settings.section(spec.config_cls) if spec.config_cls is not None else None
        outcome = await spec.migrate(config, BuildContext(settings=settings))
        if outcome:
            print(f"{spec.name}: {outcome}")


def cmd_wait_for_db(settings: Settings, args) -> int:
    """Lakekeeper's ``wait-for-db [-d] [-m] [-r N] [-b S]``: the first attempt and up to ``N`` more,
    ``S`` seconds apart. A database migrated by a newer version fails at once (waiting cannot fix it)."""
    from lakekeeper_host.store import Store
    from lakekeeper_host.store.migrate import DatabaseNewerThanServer, migration_status

    async def attempt() -> str | None:
        store = Store.from_settings(settings)
        try:
            await store.connect()
            if not await store.ping():
                return "the database does not answer"
            if args.check_migrations:
                _, pending = await migration_status(store)
                if pending:
                    return f"{len(pending)} migration(s) pending (run `lakekeeper migrate`)"
            return None
        except DatabaseNewerThanServer:
            raise
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            if store.connected:
                await store.disconnect()

    attempts = max(0, args.retries) + 1
    problem = None
    for i in range(attempts):
        problem = asyncio.run(attempt())
        if problem is None:
            print("database is ready" + (" and migrated" if args.check_migrations else ""))
            return 0
        if i + 1 < attempts:
            log.info("database not ready (%s); retry %d/%d in %gs", problem, i + 1, attempts - 1, args.backoff)
            time.sleep(args.backoff)
    print(f"lakekeeper: error: database not ready: {problem}", file=sys.stderr)
    return 1


def cmd_healthcheck(settings: Settings, args) -> int:
    """Lakekeeper's ``healthcheck [-a | -d | -s]``; without a flag the server (``-s``), as a container
    health check wants. Exit 0 healthy, 1 not."""
    check_db = args.all or args.db
    check_server = args.all or args.server or not args.db
    if check_db:
        problem = _database_problem(settings)
        if problem is not None:
            print(f"lakekeeper: error: database not healthy: {problem}", file=sys.stderr)
            return 1
        print("database is healthy")
    if check_server:
        return _server_health(args.url or f"http://127.0.0.1:{settings.host.listen_port}")
    return 0


def _database_problem(settings: Settings) -> str | None:
    from lakekeeper_host.store import Store

    async def ping() -> str | None:
        store = Store.from_settings(settings)
        try:
            await store.connect()
            return None if await store.ping() else "the database does not answer"
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            if store.connected:
                await store.disconnect()

    return asyncio.run(ping())


def _server_health(base_url: str) -> int:
    """GET /health with the standard library: nothing to log, quick to start in a probe."""
    import urllib.error
    import urllib.request

    url = base_url.rstrip("/") + "/health"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - an operator-given http URL
            status, body = response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read().decode(errors="replace")
    except (urllib.error.URLError, OSError) as exc:
        print(f"lakekeeper: error: {url} unreachable: {getattr(exc, 'reason', exc)}", file=sys.stderr)
        return 1
    print(body)
    return 0 if status == 200 else 1


def _openapi_document(settings: Settings, name: str) -> dict:
    """The document ``/api-docs/<name>/v1/openapi.json`` serves, built from the same routes without
    starting a server (no database, no identity provider contacted)."""
    from lakekeeper_host.api.docs import served_document
    from lakekeeper_host.app import create_app

    pm = _plugin_manager(settings)
    registry = Registry.collect(pm)
    app = create_app(settings, pm, registry=registry)

    async def build() -> dict:
        async with app.app_context():
            return served_document(name, registry=registry, authenticated=settings.auth.enabled)

    return asyncio.run(build())


def cmd_management_openapi(settings: Settings, args) -> int:
    """The Management API's OpenAPI document, as YAML (as Lakekeeper prints it), without a running server."""
    document = _openapi_document(settings, "management")
    try:
        import yaml
    except ImportError:  # JSON is YAML too
        print(json.dumps(document, indent=2))
    else:
        print(yaml.safe_dump(document, sort_keys=False, allow_unicode=True), end="")
    return 0


def cmd_reopen_bootstrap(settings: Settings, args) -> int:
    """Lakekeeper's ``reopen-bootstrap --yes``: the bootstrap flag is cleared; the server id, catalog
    data and the authorizer's records stay."""
    from lakekeeper_host.store import Store
    from lakekeeper_host.store.migrate import migration_status
    from lakekeeper_host.store.server import reopen_for_bootstrap

    if not args.yes:
        print("lakekeeper: error: reopen-bootstrap lets POST /management/v1/bootstrap be called again, making its "
              "caller the server's admin: re-run with --yes to confirm", file=sys.stderr)
        return 1

    async def run() -> str:
        store = Store.from_settings(settings)
        await store.connect()
        try:
            _, pending = await migration_status(store)
            if pending:
                raise StartupError(f"{len(pending)} pending migration(s): run `lakekeeper migrate` first")
            return await reopen_for_bootstrap(store)
        finally:
            await store.disconnect()

    server_id = asyncio.run(run())
    print("Catalog re-opened for bootstrap.")
    print(f"  server id: {server_id}")
    print("  next:      POST /management/v1/bootstrap as the principal that shall administer the server")
    return 0


def cmd_plugins(settings: Settings, args) -> int:
    from lakekeeper_host.plugins import list_plugins

    pm = _plugin_manager(settings)
    registry = Registry.collect(pm)
    print(json.dumps(list_plugins(pm, registry.contributions), indent=2))
    return 0


def cmd_rotate_encryption_key(settings: Settings, args) -> int:
    from pathlib import Path

    from lakekeeper_host.server.management.key_rotation import KeyRotationError, rotate_encryption_key
    from lakekeeper_host.service.secrets import SecretStoreError
    from lakekeeper_host.store import Store

    if args.new_key_file:
        new_key = sys.stdin.read() if args.new_key_file == "-" else Path(args.new_key_file).read_text()
    else:
        new_key = args.new_key

    async def run():
        store = Store.from_settings(settings)
        await store.connect()
        try:
            return await rotate_encryption_key(store, settings, new_key)
        finally:
            await store.disconnect()

    try:
        result = asyncio.run(run())
    except (KeyRotationError, SecretStoreError) as exc:
        print(f"lakekeeper: error: key not rotated: {exc}", file=sys.stderr)
        return 1
    print(
        f"re-encrypted {result.resealed} secret(s) under the new key ({result.already_current} already under it). "
        "Restart every server with LAKEKEEPER__PG_ENCRYPTION_KEY set to the new key."
    )
    return 0


def cmd_maintain(settings: Settings, args) -> int:
    from lakekeeper_host.engines.maintenance_cli import maintain

    return maintain(settings, args)


def cmd_openfga(settings: Settings, args) -> int:
    """Lakekeeper's ``openfga reconcile [--mode add-missing|add-and-delete-drift] [--dry-run]``."""
    if settings.host.authz_backend.lower() != "openfga":
        print("lakekeeper: error: openfga reconcile needs LAKEKEEPER__AUTHZ_BACKEND=openfga "
              f"(it is {settings.host.authz_backend!r})", file=sys.stderr)
        return 2
    return cmd_authz(settings, args)


def cmd_authz(settings: Settings, args) -> int:
    """``lakekeeper authz reconcile [--mode ...] [--dry-run]``: see ``server/management/authz_reconcile.py``."""
    from lakekeeper_host.registry import BuildContext
    from lakekeeper_host.server.management.authz_reconcile import reconcile_authorizer
    from lakekeeper_host.store import Store
    from lakekeeper_host.store.migrate import migration_status
    from lakekeeper_host.store.server import get_or_create_server

    async def run():
        spec = Registry.collect(_plugin_manager(settings)).authorizer(settings.host.authz_backend)
        config = settings.section(spec.config_cls) if spec.config_cls is not None else None
        store = Store.from_settings(settings)
        await store.connect()
        try:
            _, pending = await migration_status(store)
            if pending:
                raise StartupError(f"{len(pending)} pending migration(s): run `lakekeeper migrate` first")
            server = await get_or_create_server(store)  # the server id names the OpenFGA server object
            authorizer = await spec.factory(config, BuildContext(settings=settings, db=store,
                                                                 server_id=server.server_id))
            try:
                return authorizer.name, await reconcile_authorizer(
                    store, authorizer, dry_run=args.dry_run, delete_drift=args.mode == "add-and-delete-drift"
                )
            finally:
                close = getattr(authorizer, "close", None)
                if close is not None:
                    await close()
        finally:
            await store.disconnect()

    name, report = asyncio.run(run())
    verb = ("would write", "would delete") if args.dry_run else ("wrote", "deleted")
    for line in report.written:
        print(f"+ {line}")
    for line in report.deleted:
        print(f"- {line}")
    for note in report.notes:
        print(f"note: {note}")
    print(f"{name}: {verb[0]} {len(report.written)}, {verb[1]} {len(report.deleted)} record(s)"
          + (" (dry run)" if args.dry_run else "") + f" [mode {args.mode}]")
    return 0


def cmd_generic_table_openapi(settings: Settings, args) -> int:
    """The Generic Table API's OpenAPI document, as JSON (which is also YAML), without a running server."""
    print(json.dumps(_openapi_document(settings, "generic-table"), indent=2))
    return 0


COMMANDS = {
    "serve": cmd_serve,
    "migrate": cmd_migrate,
    "wait-for-db": cmd_wait_for_db,
    "healthcheck": cmd_healthcheck,
    "plugins": cmd_plugins,
    "rotate-encryption-key": cmd_rotate_encryption_key,
    "maintain": cmd_maintain,
    "authz": cmd_authz,
    "generic-table-openapi": cmd_generic_table_openapi,
    "openfga": cmd_openfga,
    "management-openapi": cmd_management_openapi,
    "reopen-bootstrap": cmd_reopen_bootstrap,
}

if __name__ == "__main__":
    sys.exit(main())
