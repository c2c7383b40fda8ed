"""A recording HTTP proxy in front of fake-gcs-server.

TEST DOUBLE, and why: fake-gcs-server accepts any token, so on its own it cannot show which token a
client sent for which object. This proxy forwards every request unchanged to the real
fake-gcs-server and records method, object (bucket and name), bearer token and user agent, so a test
can check that a client used the token it was vended, and only for objects that token's access
boundary allows. fake-gcs-server is started with the proxy as its external URL, so the upload
session and media links it hands out lead back through the proxy.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx
from attrs import define, field

from lakekeeper_testing.http_double import JsonHandler
from lakekeeper_testing.services import free_port, wait_for_port

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "proxy-connection"}


@define
class RecordedRequest:
    method: str
    path: str
    bucket: str | None
    object_name: str | None  # None for bucket-level calls (listing, upload data with upload_id)
    list_prefix: str | None
    token: str | None
    user_agent: str


def parse_gcs_path(path: str) -> tuple[str | None, str | None, str | None]:
    """(bucket, object name, list prefix) of a GCS JSON API request path."""
    parts = urllib.parse.urlsplit(path)
    query = dict(urllib.parse.parse_qsl(parts.query))
    segments = parts.path.split("/")
    for start in ("storage", "download", "upload"):
        # /storage/v1/b/<bucket>/o[/<object>], /download/storage/v1/b/..., /upload/storage/v1/b/...
        if start in segments:
            try:
                b_index = segments.index("b", segments.index(start))
            except ValueError:
                continue
            bucket = segments[b_index + 1] if len(segments) > b_index + 1 else None
            rest = segments[b_index + 2 :]
            if rest[:1] == ["o"] and len(rest) > 1:
                return bucket, urllib.parse.unquote("/".join(rest[1:])), None
            if rest[:1] == ["o"]:
                return bucket, query.get("name"), query.get("prefix")
            return bucket, None, None
    return None, None, None


def serve(port: int, upstream: str, log_path: str) -> None:
    """Run the proxy until killed, appending one JSON line per request to ``log_path``."""
    own_url = f"http://127.0.0.1:{port}"
    log = open(log_path, "a", buffering=1)  # noqa: SIM115 - lives as long as the process
    lock = threading.Lock()
    client = httpx.Client(timeout=60)  # thread-safe; keeps connections to fake-gcs-server open

    class Handler(JsonHandler):
        protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive bookkeeping

        def _forward(self) -> None:
            body = self._body()
            authorization = self.headers.get("Authorization", "")
            bucket, name, prefix = parse_gcs_path(self.path)
            record = {
                "method": self.command,
                "path": self.path,
                "bucket": bucket,
                "object_name": name,
                "list_prefix": prefix,
                "token": authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else None,
                "user_agent": self.headers.get("User-Agent", ""),
            }
            with lock:
                log.write(json.dumps(record) + "\n")
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP | {"host"}}
            response = client.request(self.command, upstream + self.path, content=body, headers=headers)
            # httpx has decoded the body: what is sent on is plain bytes of a known length
            self.send_response(response.status_code, response.reason_phrase)
            for key, value in response.headers.multi_items():
                if key.lower() in _HOP_BY_HOP | {"content-length", "content-encoding"}:
                    continue
                self.send_header(key, value.replace(upstream, own_url) if key.lower() == "location" else value)
            self.send_header("Content-Length", str(len(response.content)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(response.content)

        def _body(self) -> bytes | None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                chunks = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                    chunk = self.rfile.read(size)
                    self.rfile.readline()  # the CRLF after each chunk
                    if size == 0:
                        return b"".join(chunks)
                    chunks.append(chunk)
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else None

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _forward  # noqa: N815

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


@define
class RecordingProxy:
    """The proxy as a child process: PyArrow's GCS client can hold the GIL while it waits for an
    answer, so a proxy thread inside the test process would deadlock with it."""

    port: int = field(factory=free_port)
    _process: subprocess.Popen | None = None
    _log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, upstream: str) -> RecordingProxy:
        self._log_path = Path(tempfile.mkstemp(prefix="gcs-proxy-", suffix=".jsonl")[1])
        self._process = subprocess.Popen(
            [sys.executable, __file__, str(self.port), upstream, str(self._log_path)], start_new_session=True
        )
        wait_for_port(self.port, process=self._process)
        return self

    @property
    def requests(self) -> list[RecordedRequest]:
        assert self._log_path is not None
        lines = self._log_path.read_text().splitlines()
        return [RecordedRequest(**json.loads(line)) for line in lines if line.strip()]

    def close(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(10)
            self._process = None
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2], sys.argv[3])
