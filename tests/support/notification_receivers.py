"""Real receivers of notifications on loopback: an SMTP server (aiosmtpd) and a chat webhook
(an HTTP server that records the JSON posts Apprise's ``json://`` sends, or hangs, or fails).

Both run in threads of the test process and are stopped by their context managers.
"""

from __future__ import annotations

import json
import socket
import threading
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class _Inbox:
    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.lock = threading.Lock()

    async def handle_DATA(self, server: object, session: object, envelope: Any) -> str:
        with self.lock:
            message = message_from_bytes(envelope.content)
            message["X-Envelope-To"] = ", ".join(envelope.rcpt_tos)
            self.messages.append(message)
        return "250 Message accepted for delivery"


class SmtpServer:
    """An SMTP server on a free loopback port; ``messages`` holds what it accepted."""

    def __init__(self) -> None:
        self.port = free_port()
        self._inbox = _Inbox()
        self._controller = Controller(self._inbox, hostname="127.0.0.1", port=self.port)

    @property
    def messages(self) -> list[Message]:
        with self._inbox.lock:
            return list(self._inbox.messages)

    def __enter__(self) -> SmtpServer:
        self._controller.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._controller.stop()


Mode = Literal["ok", "fail", "hang"]


class ChatReceiver:
    """A chat webhook on loopback. ``mode``: ``ok`` records the post and answers 200, ``fail``
    answers 503, ``hang`` answers nothing until ``release`` is set (or ``hang_seconds``)."""

    path = "/hooks/team-chat"

    def __init__(self, mode: Mode = "ok") -> None:
        self.mode: Mode = mode
        self.hang_seconds = 30.0
        self.release = threading.Event()
        self.posts: list[dict[str, Any]] = []
        self.requests = 0
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def apprise_url(self) -> str:
        return f"json://127.0.0.1:{self.server.server_address[1]}{self.path}"

    def __enter__(self) -> ChatReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    receiver.requests += 1
                    mode = receiver.mode
                if mode == "hang":
                    receiver.release.wait(receiver.hang_seconds)
                if mode == "fail":
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.posts.append(json.loads(body))
                try:
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:  # the client gave up waiting
                    pass

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler
