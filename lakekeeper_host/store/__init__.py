"""All SQL lives here. ``Store`` is the connection; the modules are the queries."""

from lakekeeper_host.store.db import Executor, Store, dumps, loads, new_id, now_ms

__all__ = ["Executor", "Store", "dumps", "loads", "new_id", "now_ms"]
