"""``GET /management/v1/plugins``: installed plugins, versions and contributions."""

from quart import Blueprint

from lakekeeper_host.api.common import json_response, state
from lakekeeper_host.plugins import list_plugins

blueprint = Blueprint("plugins_listing", __name__)


@blueprint.get("/management/v1/plugins")
async def plugins():
    app_state = state()
    return json_response({"plugins": list_plugins(app_state.pm, app_state.registry.contributions)})
