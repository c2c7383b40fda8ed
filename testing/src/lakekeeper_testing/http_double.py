"""The HTTP plumbing of the in-process test doubles (OIDC issuer, TokenReview API, STS, managed
identity, endpoint policy, recording proxy): an ``http.server`` handler that keeps test output quiet
and answers JSON."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and answers JSON with :meth:`send_json`."""

    def send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        pass
