"""The web-stack floor: the same Quart + hypercorn stack answering loadTable with precomputed bytes.

Whatever our server does on top of this (routing, auth, cache lookups, database, JSON) is the
cost we measure against it. Run: ``python -m bench.floor_app --port P --body-file F [--workers N]``;
the body file holds the exact loadTable response of a real table. ``/catalog/v1/config`` answers
like ours so the same client can resolve the prefix.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os

from quart import Quart, Response

_BODY_ENV = "BENCH_FLOOR_BODY_FILE"
_PREFIX_ENV = "BENCH_FLOOR_PREFIX"


def create_app(body: bytes, prefix: str) -> Quart:
    app = Quart("bench_floor")
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    config = json.dumps({"defaults": {"prefix": prefix}, "overrides": {}}).encode()

    @app.get("/health")
    async def health():
        return Response(b'{"status":"healthy"}', content_type="application/json")

    @app.get("/catalog/v1/config")
    async def get_config():
        return Response(config, content_type="application/json")

    @app.get("/catalog/v1/<prefix>/namespaces/<namespace>/tables/<table>")
    async def load_table(prefix: str, namespace: str, table: str):
        return Response(body, content_type="application/json", headers={"etag": etag})

    return app


def _app_from_env() -> Quart:
    with open(os.environ[_BODY_ENV], "rb") as handle:
        return create_app(handle.read(), os.environ.get(_PREFIX_ENV, "floor"))


# ``bench.floor_app:app`` for hypercorn's worker processes, which inherit the environment
app = _app_from_env() if _BODY_ENV in os.environ else None


def main() -> int:
    from hypercorn.config import Config
    from hypercorn.run import run

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--body-file", required=True)
    parser.add_argument("--prefix", default="floor")
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    os.environ[_BODY_ENV] = os.path.abspath(args.body_file)
    os.environ[_PREFIX_ENV] = args.prefix
    config = Config()  # the settings our server uses (lakekeeper_host.runtime.hypercorn_settings.hypercorn_config)
    config.bind = [f"127.0.0.1:{args.port}"]
    config.workers = args.workers
    config.accesslog = None
    config.keep_alive_timeout = 75
    config.graceful_timeout = 10
    if args.workers == 1:
        import asyncio
        import signal

        from hypercorn.asyncio import serve

        app = _app_from_env()
        shutdown = asyncio.Event()

        async def serve_until_signalled() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, shutdown.set)
            await serve(app, config, shutdown_trigger=shutdown.wait)

        asyncio.run(serve_until_signalled())
        return 0
    config.application_path = "bench.floor_app:app"
    return run(config)


if __name__ == "__main__":
    raise SystemExit(main())
