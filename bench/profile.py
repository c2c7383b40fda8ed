"""Where a loadTable's server CPU goes: py-spy's collapsed stacks (``--format raw``) -> a breakdown.

Each sample is charged to the first category, in the order of :data:`CATEGORIES`, whose pattern
one of its frames matches (innermost frames first), so a JSON encode inside the handler counts as
"serialise", not as "handler". Samples of threads other than the event loop's (the metrics
server, idle selector threads) are left out.

    python -m bench.profile stacks.raw        # prints the table as JSON
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from typing import Any

# (category, frame pattern): the first match, scanning a stack from its innermost frame, wins
CATEGORIES: tuple[tuple[str, str], ...] = (
    ("metrics and endpoint statistics", r"prometheus_client|Pipeline\.observe|endpoint_stats|Metrics\."),
    ("logging", r"logging/__init__|lakekeeper_host/runtime/logs"),
    ("JSON parse / serialise", r"json/|orjson|load_result_json|refs_only|to_json|model_dump"),
    ("authentication and request metadata", r"Pipeline\.authenticate|Pipeline\.metadata|base_uri_for|"
                                            r"Pipeline\.request_id|new_id"),
    ("authorization", r"server/authorize\.py|authz"),
    ("storage config and credential vending", r"table_config|access_request|storage_file|storage_for|"
                                              r"metadata_file_present"),
    ("ETag", r"server/tables/etag\.py"),
    ("store lookups and caches", r"lakekeeper_host/store/|server/resolve\.py"),
    ("database driver", r"asyncpg|databases/|aiosqlite|sqlalchemy"),
    ("routing and pipeline", r"lakekeeper_host/api/"),
    ("loadTable logic", r"lakekeeper_host/server/"),
    ("HTTP server (hypercorn, h11)", r"hypercorn|h11/|wsgiref"),
    ("socket I/O and event loop", r"asyncio/|selectors"),
)
_COMPILED = tuple((name, re.compile(pattern)) for name, pattern in CATEGORIES)
_IDLE = re.compile(r"serve_forever|_bootstrap_inner")


def breakdown(raw: str) -> dict[str, Any]:
    """``{"samples": n, "shares": {category: percent}}`` for collapsed stacks ``frame;frame;... count``."""
    counts: Counter[str] = Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, number = line.rstrip().rpartition(" ")
        if not stack or not number.isdigit():
            continue
        frames = stack.split(";")[1:]  # the first element names the process
        if not frames or any(_IDLE.search(frame) for frame in frames):
            continue
        samples = int(number)
        total += samples
        for frame in reversed(frames):
            category = next((name for name, pattern in _COMPILED if pattern.search(frame)), None)
            if category is not None:
                counts[category] += samples
                break
        else:
            counts["other (interpreter, C extensions)"] += samples
    shares = {name: round(100 * count / total, 1) for name, count in counts.most_common()} if total else {}
    return {"samples": total, "shares": shares}


def main(argv: list[str]) -> int:
    with open(argv[0]) as handle:
        print(json.dumps(breakdown(handle.read()), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
