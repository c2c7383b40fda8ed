"""Test-only contract checker ``concurrent-commit``: makes a commit lose its race, deterministically.

It never objects. When a table commit sets the property ``test.concurrent-commit`` to JSON
``{"url": ..., "body": ...}``, the checker -- the first time it sees that value -- POSTs ``body``
to ``url`` (a commit of the same table through the same server) and waits for it to succeed.
The commit being checked then finds the table changed under it when it swaps the metadata
pointer, so the server retries it against the newer metadata, and every checker is asked again.
"""

import json

import httpx
from pyiceberg.table.update import SetPropertiesUpdate

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec
from lakekeeper_host.service.contracts import Violation

TRIGGER = "test.concurrent-commit"


class ConcurrentCommit:
    name = "concurrent-commit"

    def __init__(self):
        self.fired: set[str] = set()

    async def check_table_updates(self, updates, metadata):
        for update in updates:
            if not isinstance(update, SetPropertiesUpdate) or TRIGGER not in update.updates:
                continue
            trigger = update.updates[TRIGGER]
            if trigger in self.fired:
                continue
            self.fired.add(trigger)
            spec = json.loads(trigger)
            async with httpx.AsyncClient(timeout=30) as client:
                response = await client.post(spec["url"], json=spec["body"])
            if response.status_code != 200:
                return Violation(f"the concurrent commit failed: HTTP {response.status_code} {response.text}")
        return None


@hookimpl
def lakekeeper_contract_checkers():
    async def build(config, ctx):
        return ConcurrentCommit()

    return [BackendSpec(name="concurrent-commit", factory=build)]
