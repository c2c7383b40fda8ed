"""``lakekeeper serve | migrate | wait-for-db | healthcheck | plugins | maintain | version``.

Errors are one clear line and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections.abc import Sequence

from lakekeeper_host import __version__
from lakekeeper_host.config import ConfigError, Settings, load_settings
from lakekeeper_host.registry import Registry, StartupError

log = logging.getLogger("lakekeeper")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = {
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "target": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload)


def setup_logging(settings: Settings | None) -> None:
    level = (settings.host.log_level if settings else "info").upper()
    handler = logging.StreamHandler(sys.stderr)
    if settings is None or settings.host.log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(getattr(logging, level, logging.INFO))
    for noisy in ("hypercorn.access", "databases", "aiosqlite", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


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
    from lakekeeper_host.server.serve import serve

    if args.migrate:
        settings = load_settings(config_file=args.config, overrides={"debug": {"migrate_before_serve": "true"}})
    return serve(settings, _plugin_manager(settings))


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

    asyncio.run(run())
    return 0


def cmd_wait_for_db(settings: Settings, args) -> int:
    from lakekeeper_host.store import Store
    from lakekeeper_host.store.migrate import migration_status

    async def attempt() -> str | None:
        store = Store.from_settings(settings)
        try:
            await store.connect()
            await store.fetch_val("SELECT 1")
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

    from lakekeeper_host.server.secret_admin import KeyRotationError, rotate_encryption_key
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


COMMANDS = {
    "serve": cmd_serve,
    "migrate": cmd_migrate,
    "wait-for-db": cmd_wait_for_db,
    "healthcheck": cmd_healthcheck,
    "plugins": cmd_plugins,
    "rotate-encryption-key": cmd_rotate_encryption_key,
    "maintain": cmd_maintain,
}

if __name__ == "__main__":
    sys.exit(main())
