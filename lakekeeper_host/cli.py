"""``lakekeeper serve | migrate | wait-for-db | healthcheck | plugins | maintain | rotate-encryption-key |
authz reconcile | version``.

Errors are one clear line and a non-zero exit code, never a traceback.
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

log = logging.getLogger("lakekeeper")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakekeeper", description="Lakekeeper Iceberg REST catalog")
    parser.add_argument("--config", help="TOML config file (also LAKEKEEPER__CONFIG_FILE)")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="run the catalog server")
    serve.add_argument("--migrate", action="store_true", help="apply pending migrations before serving")
    sub.add_parser("migrate", help="apply database migrations (idempotent)")
    wait = sub.add_parser("wait-for-db", help="wait until the database accepts connections")
    wait.add_argument("-m", "--check-migrations", action="store_true", help="also wait for migrations")
    wait.add_argument("--retries", type=int, default=15)
    wait.add_argument("--backoff", type=float, default=2.0)
    health = sub.add_parser("healthcheck", help="ask a running server's /health")
    health.add_argument("--url", help="base URL (default http://127.0.0.1:<LISTEN_PORT>)")
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
    sub.add_parser("version", help="print the version")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = args.command or "serve"
    if command == "version":
        print(__version__)
        return 0
    try:
        settings = load_settings(config_file=args.config)
        setup_logging(settings)
        handler = COMMANDS[command]
        return handler(settings, args) or 0
    except (ConfigError, StartupError) as exc:
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
    from lakekeeper_host.store import Store
    from lakekeeper_host.store.migrate import migration_status

    async def attempt() -> str | None:
        store = Store.from_settings(settings)
        try:
            await store.connect()
            await store.ping()
            if args.check_migrations:
                _, pending = await migration_status(store)
                if pending:
                    return f"{len(pending)} migration(s) pending"
            return None
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        finally:
            if store.connected:
                await store.disconnect()

    problem = None
    for i in range(max(1, args.retries)):
        problem = asyncio.run(attempt())
        if problem is None:
            print("database is ready")
            return 0
        if i + 1 < args.retries:
            time.sleep(args.backoff)
    print(f"lakekeeper: error: database not ready: {problem}", file=sys.stderr)
    return 1


def cmd_healthcheck(settings: Settings, args) -> int:
    import httpx

    url = (args.url or f"http://127.0.0.1:{settings.host.listen_port}").rstrip("/") + "/health"
    try:
        response = httpx.get(url, timeout=5)
    except httpx.HTTPError as exc:
        print(f"lakekeeper: error: {url} unreachable: {exc}", file=sys.stderr)
        return 1
    print(response.text)
    return 0 if response.status_code == 200 else 1


def cmd_plugins(settings: Settings, args) -> int:
    from lakekeeper_host.plugins import list_plugins

    pm = _plugin_manager(settings)
    registry = Registry.collect(pm)
    print(json.dumps(list_plugins(pm, registry.contributions), indent=2))
    return 0


def cmd_rotate_encryption_key(settings: Settings, args) -> int:
    from pathlib import Path

    from lakekeeper_host.server.key_rotation import KeyRotationError, rotate_encryption_key
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
    from lakekeeper_host.maintenance_cli import maintain

    return maintain(settings, args)


def cmd_authz(settings: Settings, args) -> int:
    """``lakekeeper authz reconcile [--dry-run]``: see ``server/authz_reconcile.py``."""
    from lakekeeper_host.registry import BuildContext
    from lakekeeper_host.server.authz_reconcile import reconcile_authorizer
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
                return authorizer.name, await reconcile_authorizer(store, authorizer, dry_run=args.dry_run)
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
          + (" (dry run)" if args.dry_run else ""))
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
}

if __name__ == "__main__":
    sys.exit(main())
