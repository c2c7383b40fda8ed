"""Built-in authorizer ``allowall`` (Lakekeeper's default): every action is allowed."""

from lakekeeper_host import hookimpl
from lakekeeper_host.registry import BackendSpec, BuildContext
from lakekeeper_host.service.authz import AllowAllAuthorizer, Authorizer


async def _build(config: None, ctx: BuildContext) -> AllowAllAuthorizer:
    return AllowAllAuthorizer()


@hookimpl
def lakekeeper_authorizers() -> list[BackendSpec[Authorizer, None]]:
    return [BackendSpec(name="allowall", aliases=("allow-all",), factory=_build)]
