"""Test-only contract checker that blocks every change (Lakekeeper's DenyAllChecker)."""

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec
from lakekeeper_host.service.contracts import RenameDestination, TabularView, Violation


class DenyAllChecker:
    name = "deny-all"

    async def check_table_updates(self, updates, metadata):
        return Violation("deny-all checker blocks every table change")

    async def check_view_updates(self, updates, metadata):
        return Violation("deny-all checker blocks every view change")

    async def check_drop(self, tabular: TabularView) -> Violation:
        return Violation(f"deny-all checker blocks every drop: {tabular.typ} {tabular.name}")

    async def check_rename(self, tabular: TabularView, destination: RenameDestination) -> Violation:
        target = ".".join([*destination.namespace, destination.name])
        return Violation(f"deny-all checker blocks every rename: {tabular.typ} {tabular.name} to {target}")


@hookimpl
def lakekeeper_contract_checkers():
    async def build(config, ctx):
        return DenyAllChecker()

    return [BackendSpec(name="deny-all", factory=build)]
