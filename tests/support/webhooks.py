"""A misbehaving eviction webhook receiver on loopback, for the delivery bound tests.

The receiver checks each request's signature and idempotency key, counts the requests in flight
at each moment (the most ever seen is ``max_in_flight``) and answers as ``mode`` says:

- ``ok``: 200 at once;
- ``hang``: nothing until ``release`` is set (or ``hang_seconds`` pass), then 200;
- ``trickle``: a 200 answer one byte every ``trickle_interval`` seconds, so no single socket
  operation of the client ever waits long; records whether the client hung up half-way;
- ``garbage``: a status line that is not HTTP;
- ``crowd``: holds each request until ``crowd`` requests are in flight together (or
  ``crowd_wait`` seconds pass), then 200: a client that sends more at once than allowed shows up
  as ``max_in_flight > allowed`` rather than by luck of timing.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

Mode = Literal["ok", "hang", "trickle", "garbage", "crowd"]
TRICKLED_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


class MisbehavingReceiver:
    path = "/evictions"

    def __init__(self, secret: str, mode: Mode = "ok") -> None:
        self.secret = secret.encode()
        self.mode: Mode = mode
        self.hang_seconds = 30.0
        self.trickle_interval = 0.2
        self.crowd = 2
        self.crowd_wait = 1.5
        self.release = threading.Event()
        self.lock = threading.Condition()
        self.keys: list[str] = []  # Idempotency-Key of every request, in arrival order
        self.answered: list[str] = []  # keys of the requests that got a complete 200
        self.hung_up: list[str] = []  # keys of trickled answers the client cut off
        self.problems: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"

    def __enter__(self) -> MisbehavingReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def count(self) -> int:
        with self.lock:
            return len(self.keys)

    def _check(self, headers: object, body: bytes) -> str:
        key = headers.get("Idempotency-Key", "")  # type: ignore[attr-defined]
        signature = headers.get("X-Scheduler-Signature", "")  # type: ignore[attr-defined]
        expected = "sha256=" + hmac.new(self.secret, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            self.problems.append(f"bad signature {signature!r} for key {key!r}")
        elif str(json.loads(body).get("order_id")) != key:
            self.problems.append(f"Idempotency-Key {key!r} does not match {body!r}")
        return key

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.lock:
                    key = receiver._check(self.headers, body)
                    receiver.keys.append(key)
                    receiver.in_flight += 1
                    receiver.max_in_flight = max(receiver.max_in_flight, receiver.in_flight)
                    receiver.lock.notify_all()
                try:
                    self._wait()
                finally:
                    # No longer in flight once the answer starts: the client cannot send its
                    # next request before it has this answer, so it is never counted twice.
                    with receiver.lock:
                        receiver.in_flight -= 1
                with contextlib.suppress(OSError):  # the client went away
                    self._answer(key)

            def _wait(self) -> None:
                if receiver.mode == "hang":
                    receiver.release.wait(receiver.hang_seconds)
                elif receiver.mode == "crowd":
                    with receiver.lock:
                        receiver.lock.wait_for(
                            lambda: receiver.in_flight >= receiver.crowd, receiver.crowd_wait
                        )

            def _answer(self, key: str) -> None:
                if receiver.mode == "garbage":
                    self.wfile.write(b"this is not HTTP\r\n\r\n")
                    return
                if receiver.mode == "trickle":
                    try:
                        for index in range(len(TRICKLED_ANSWER)):
                            self.wfile.write(TRICKLED_ANSWER[index : index + 1])
                            time.sleep(receiver.trickle_interval)
                    except OSError:
                        with receiver.lock:
                            receiver.hung_up.append(key)
                        return
                else:
                    self.send_response(200)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                with receiver.lock:
                    receiver.answered.append(key)

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: the receiver keeps its own record

        return Handler
