"""The web console at ``/ui``: server-rendered pages over the host's own HTTP API.

``register_console(app, settings)`` mounts it (``create_app`` does, unless
``LAKEKEEPER__UI__ENABLED=false``). Templates and static files ship inside the host wheel; there
is no frontend build.
"""

from __future__ import annotations

import logging

from quart import Quart, redirect

from lakekeeper_host.config import Settings
from lakekeeper_host.ui.auth import SESSION_COOKIE, ConsoleAuth


def register_console(app: Quart, settings: Settings) -> None:
    from lakekeeper_host.ui import insights, permissions, tables  # noqa: F401 - their pages join the blueprint
    from lakekeeper_host.ui.views import blueprint, callback

    # every page makes in-process API calls; the API logs and counts them already, httpx's per-request
    # INFO line would only double the log
    logging.getLogger("httpx").setLevel(max(logging.getLogger("httpx").level, logging.WARNING))
    auth = ConsoleAuth(settings)
    app.extensions["lakekeeper_console_auth"] = auth
    app.secret_key = auth.cookie_key
    app.config.update(
        SESSION_COOKIE_NAME=SESSION_COOKIE,
        SESSION_COOKIE_PATH="/ui",
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=(settings.host.ui.lakekeeper_url or settings.host.base_uri or "").startswith("https:"),
    )
    app.register_blueprint(blueprint)
    # the OIDC redirect path is configurable (UI__OPENID_REDIRECT_PATH, relative to /ui)
    app.add_url_rule("/ui" + settings.host.ui.openid_redirect_path, endpoint="console.callback",
                     view_func=callback, methods=["GET"])

    async def to_console():
        return redirect("/ui/", 308)

    # Lakekeeper answers / and /ui with a redirect to the console
    app.add_url_rule("/", endpoint="console_root", view_func=to_console, methods=["GET"])
