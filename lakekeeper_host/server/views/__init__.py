"""Views: one module per catalog operation; ``metadata`` applies view updates."""

from __future__ import annotations

from lakekeeper_host.server.views.commit import commit_view
from lakekeeper_host.server.views.create import create_view
from lakekeeper_host.server.views.drop import drop_view
from lakekeeper_host.server.views.load import list_views, load_view, view_exists
from lakekeeper_host.server.views.register import register_view

__all__ = ["commit_view", "create_view", "drop_view", "list_views", "load_view", "register_view", "view_exists"]
