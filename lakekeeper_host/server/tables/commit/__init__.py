"""The table commit: parse the request, check requirements, apply updates, swap atomically (protocol)."""

from __future__ import annotations

from lakekeeper_host.server.tables.commit.protocol import commit_tables

__all__ = ["commit_tables"]
