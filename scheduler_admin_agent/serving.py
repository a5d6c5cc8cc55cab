"""The agent's small HTTP servers (the webhook receiver, the health endpoints): a threaded
server on ``HOST:PORT`` in a daemon thread that answers every request with JSON."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

logger = logging.getLogger(__name__)

#: ``handle(method, path, headers, body) -> (status, JSON body)``.
Handle = Callable[[str, str, Mapping[str, str], bytes], tuple[int, Any]]


class JsonServer:
    def __init__(self, listen: str, name: str, handle: Handle, *, body_max: int) -> None:
        host, _, port = listen.rpartition(":")
        address = (host or "0.0.0.0", int(port))  # noqa: S104 - the product / the kubelet call in
        self.server = ThreadingHTTPServer(address, _handler(name, handle, body_max))
        self.thread = threading.Thread(target=self.server.serve_forever, name=name, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(name: str, handle: Handle, body_max: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def _serve(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length > body_max:
                self._answer(413, {"error": "too large"})
                return
            body = self.rfile.read(length) if length else b""
            try:
                status, answer = handle(method, self.path, self.headers, body)
            except Exception as error:  # a caller that retries is told what failed
                logger.warning("%s: %s %s failed: %s", name, method, self.path, error)
                status, answer = 503, {"error": f"{type(error).__name__}: {error}"}
            self._answer(status, answer)

        def _answer(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            logger.debug(f"{name}: " + format, *args)

    return Handler
