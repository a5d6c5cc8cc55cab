"""``FakeKubeAPI``: a local HTTP server that speaks the Kubernetes API's wire format.

The official ``kubernetes`` Python client works against it unchanged (``client_configuration()``
or ``write_kubeconfig()``), so the cluster agent is tested with the code it runs in production.
Objects are plain dicts (build them with ``fixtures``); state is in memory, guarded by one lock,
and every write goes through one path that bumps the resource version and feeds the watches.

Reproduced from the real API server (Kubernetes 1.33; the source files are named where the
behaviour is subtle):

- Resources: ``nodes`` (cluster-scoped), ``pods``, ``configmaps`` (``/api/v1``) and
  ``poddisruptionbudgets`` (``/apis/policy/v1``); GET, LIST (cluster-wide and per namespace),
  WATCH, POST, PUT, PATCH, DELETE, and the pods' ``eviction`` subresource.
- Resource versions: one global counter; every object carries ``metadata.resourceVersion`` (the
  version of its last write), a list carries the counter in ``metadata.resourceVersion``; a
  PUT or PATCH that changes nothing does not bump it. A DELETED event's object carries the
  deletion's version.
- Lists: items without ``kind``/``apiVersion`` (as typed lists are served), ordered by
  ``namespace/name`` (etcd key order); ``labelSelector``, ``fieldSelector`` (the real field
  lists, see ``selectors``), ``limit`` + ``continue`` (a base64 token like the real one; later
  pages are read at the first page's resource version, reconstructed from the event history,
  and ``remainingItemCount`` is given when no selector is used; a token older than the history
  answers 410 Expired), ``resourceVersion`` + ``resourceVersionMatch=Exact`` (read at that
  version) and a resourceVersion newer than the server's (504 "Too large resource version").
- Watches (``?watch=true|1``): HTTP 200, ``Transfer-Encoding: chunked``, one JSON event per line.
  ``resourceVersion`` unset or ``"0"``: synthetic ADDED events for every existing object, then
  the changes ("Get State and Start at Most Recent"/"at Any",
  https://kubernetes.io/docs/reference/using-api/api-concepts/#semantics-for-watch);
  ``sendInitialEvents=true`` also ends the initial events with a BOOKMARK annotated
  ``k8s.io/initial-events-end: "true"``. ``resourceVersion=N``: every change after N, from the
  bounded history; N older than the history: an ERROR event whose object is a Status 410
  ``Expired`` "too old resource version: N (oldest-1)", then the stream ends (the watch cache's
  ``newErrWatcher``). Selectors apply to watches as in the watch cache: an object that stops
  matching is sent as DELETED, one that starts matching as ADDED. ``allowWatchBookmarks``:
  BOOKMARK events (``kind``, ``apiVersion``, ``metadata.resourceVersion`` only) every
  ``bookmark_interval`` seconds and on ``send_bookmarks()``; the client's ``Watch`` stores their
  version for its reconnects. ``timeoutSeconds`` ends the stream
  cleanly (terminating chunk). ``end_watches()`` ends every open stream (cleanly, as the server's
  own timeout does, or ``abrupt=True``: the connection is cut without the terminating chunk, as
  an API server crash does).
- Eviction (pkg/registry/core/pod/storage/eviction.go): a ``policy/v1`` (or v1beta1)
  ``Eviction`` body whose ``metadata.name`` matches the URL (400 otherwise); 404 ``NotFound``
  for a missing pod; a pod that is Pending, Succeeded, Failed or already terminating is deleted
  without looking at budgets (``canIgnorePDB``; evicting a terminating pod answers 201 again and
  only adds the DisruptionTarget condition if it is missing); more than one matching budget:
  500 "This pod has more than one PodDisruptionBudget, which the eviction subresource does not
  support."; a budget whose ``status.observedGeneration`` is behind: 429 "still being
  processed"; ``disruptionsAllowed`` 0: 429 ``TooManyRequests`` with the ``DisruptionBudget``
  cause "The disruption budget X needs N healthy pods and has M currently"; an unready pod
  covered by a budget that is healthy enough is evicted without using the budget; otherwise the
  budget's ``disruptionsAllowed`` is decremented and the pod recorded in ``disruptedPods``
  (MODIFIED budget). The eviction's preconditions (uid, resourceVersion) are checked only then,
  at the deletion, as the real server does: a stale order has spent a disruption when it gets
  its 409. A Status with ``retryAfterSeconds`` carries a ``Retry-After`` header. Success is
  201 with ``{"kind":"Status","apiVersion":"v1","metadata":{},
  "status":"Success","code":201}``. The pod then gets the ``DisruptionTarget`` condition
  (``EvictionByEvictionAPI``, MODIFIED) and is deleted gracefully (``deletionTimestamp``,
  MODIFIED), then removed ``grace_seconds`` later (DELETED) as the kubelet would; an unbound or
  finished pod, or a grace period of 0, is removed at once.
- Pod DELETE is the same graceful deletion and answers the pod; other kinds are removed at once
  and answer a Success Status. DeleteOptions preconditions (uid, resourceVersion) give 409.
- PUT: a ``metadata.resourceVersion`` other than the current one is 409 ``Conflict`` ("the
  object has been modified; please apply your changes to the latest version and try again");
  without one the update is unconditional; a missing object is 404 (no create on update); a
  name or namespace that does not match the URL is 400. Status is ignored on PUT and PATCH of
  pods, nodes and budgets (it is a subresource), and a pod's spec cannot change (422 Invalid).
- PATCH: merge, strategic merge (as merge, see ``patches``) and JSON patch; the v36 client sends
  ``application/json-patch+json`` for a list body and switches to
  ``application/strategic-merge-patch+json`` for a dict body (``rest.py``). A resourceVersion
  in the patched object is a precondition (409 if stale).
- POST: 201 with the stored object; an existing name is 409 ``AlreadyExists``; a
  resourceVersion in the body is rejected as the real server does; ``generateName`` is honoured.
- Errors are ``metav1.Status`` objects (``status: Failure``, ``reason``, ``code``, ``message``,
  ``details``) with the real messages; unknown paths are 404 "the server could not find the
  requested resource". With ``token=...`` every request needs ``Authorization: Bearer <token>``
  (401 ``Unauthorized`` otherwise; the scheme is matched case-insensitively, as the in-cluster
  config sends ``bearer``).

- managedFields: every stored object carries ``metadata.managedFields``, one entry per manager
  (the User-Agent's name for REST writes, ``kube-controller-manager`` for the test API).
- Budget update conflicts: an eviction reads the budget, then writes it with the version read
  (outside the lock other requests share), retrying on a conflict as ``RetryOnConflict
  (EvictionsRetry)`` does (``eviction_retry_steps`` 20, ``eviction_retry_interval`` 0.5 s), and
  answers the last 409 ``Conflict`` on ``poddisruptionbudgets.policy`` when all conflicted;
  ``interfere_with_budget`` makes the next evictions' writes conflict. A stale uid precondition
  is the DisruptionTarget update's 409 ("the UID in the precondition (...) does not match").
- Slow watchers (``watch_buffer``): a watcher with that many events queued and not written is
  closed as the watch cache closes one whose buffer is full: its stream ends cleanly and what
  was queued is never sent; ``hold_watches()`` stops every stream's writing meanwhile.
- Continue tokens expire on their own (``continue_ttl``: once their version was superseded
  that long ago) or after ``compact()``: 410 ``Expired`` with the inconsistent-continue message
  and a fresh token (version -1: the latest) in the Status's ``metadata.continue``.
- ConfigMaps over 1 MiB are refused (422) on create and update. Admission webhooks
  (``add_webhook``, see ``admission``) can deny a create, update, delete or eviction.

RBAC: set ``authorizer`` (``strict_rbac.Authorizer``, from the agent's manifests) and every
request the agent's service account is not granted answers 403 with the real message. A
ConfigMap over 1 MiB (data and binaryData) is 422 "Too long".

Not reproduced: namespaces as owners of objects (any namespace exists, whether or not a
Namespace object is stored; stored ones are listed and watched), other kinds, the legacy
``/api/v1/watch/...`` paths, discovery beyond ``/version``, server-side apply, dry run other
than on DELETE and eviction (there nothing is written), ``deletecollection``, admission and
validation beyond what is listed (webhooks are test callables: no mutation, no
failurePolicy, no timeouts), PDB ``generation`` bumps on spec changes and the disruption
controller (budgets change only through eviction or the test API), the kubelet (pods change
phase only through the test API), TLS, and the real server's ~1 minute bookmark cadence and
1800 s default watch timeout (both are constructor arguments here).

Test controls (on ``ClusterState``, the storage this server inherits, and here):
``add``/``update``/``edit``/``delete``/``get``/``objects`` of any object, ``load(cluster)``,
``terminate`` (graceful pod deletion), ``reap``, ``set_pdb_allowed``, ``edit_configmap``,
``end_watches``, ``compact``, ``send_bookmarks``, ``wait_for_watches``, ``watch_count``,
``resource_version``, ``fail_next``, ``hold_watches``, ``at_list_page`` (an action between two
pages of a client's list, e.g. writes and a compaction), ``peek`` (the stored objects
uncopied); records: ``requests`` (method, path, query, body, status, content type; logged
before the answer is written), ``evictions()``, ``eviction_log()``, ``eviction_attempts()``.
Writes through the test API are what controllers and kubelets do: they always bump the resource
version and skip the REST rules (spec immutability, preconditions).
"""

from __future__ import annotations

import contextlib
import json
import queue
import re
import secrets
import select
import socket
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import parse_qs, unquote, urlsplit

import kubernetes.client
import yaml

from tests.support.kube.resources import (
    BY_PATH,
    PATH_PATTERN,
    PODS,
    REASONS,
    ApiError,
    Obj,
    bad_request,
)
from tests.support.kube.state import END, ClusterState, Watcher, WatchPlan, truthy


class RecordedRequest(NamedTuple):
    """One request as the server saw it; ``status`` is the HTTP status it answered."""

    method: str
    path: str
    query: dict[str, str]
    body: Any
    status: int
    content_type: str = ""


@dataclass
class _Injection:
    method: str
    pattern: re.Pattern[str]
    code: int
    remaining: int
    reason: str | None
    message: str
    details: dict[str, Any] | None = None


#: Encoded list items kept (``FakeKubeAPI._encode_list``) before the store is emptied.
ENCODED_KEPT = 250_000


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # an agent opens many connections at once (its client's pool)
    api: FakeKubeAPI

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Connections cut by a client or by ``stop()`` are normal here; anything else is not."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.api._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.api._track(self.connection, add=False)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log is ``FakeKubeAPI.requests``."""

    def do_GET(self) -> None:
        self.server.api._serve(self, "GET")

    def do_POST(self) -> None:
        self.server.api._serve(self, "POST")

    def do_PUT(self) -> None:
        self.server.api._serve(self, "PUT")

    def do_PATCH(self) -> None:
        self.server.api._serve(self, "PATCH")

    def do_DELETE(self) -> None:
        self.server.api._serve(self, "DELETE")


def _write_json(
    handler: BaseHTTPRequestHandler, code: int, payload: Any, data: bytes | None = None
) -> None:
    """Answer ``payload`` as JSON (``data``: its encoding, when the caller has it)."""
    if data is None:
        data = json.dumps(payload, separators=(",", ":")).encode()
    handler.send_response(code)
    handler.send_header("Audit-Id", str(uuid.uuid4()))
    handler.send_header("Cache-Control", "no-cache, private")
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    # The real server turns a Status's retryAfterSeconds into a Retry-After header.
    retry_after = ((payload.get("details") or {}) if isinstance(payload, dict) else {}).get(
        "retryAfterSeconds"
    )
    if isinstance(retry_after, int) and retry_after > 0:
        handler.send_header("Retry-After", str(retry_after))
    handler.end_headers()
    handler.wfile.write(data)


class FakeKubeAPI(ClusterState):
    """A Kubernetes API server stand-in on 127.0.0.1 (see the module docstring): the state and
    verbs of ``ClusterState`` (its test-facing methods included) served over HTTP.

    Use as a context manager (``with FakeKubeAPI() as api:``) or ``start()``/``stop()``.
    ``token``: require ``Authorization: Bearer <token>``. ``bookmark_interval``: seconds
    between periodic BOOKMARK events on watches that allow them (None: only
    ``send_bookmarks()``). ``grace_seconds``, ``history_limit``, ``watch_timeout``,
    ``watch_buffer``, ``continue_ttl``, ``eviction_retry_interval``: see ``StoreBase``.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        grace_seconds: float | None = 0.2,
        history_limit: int = 50_000,
        bookmark_interval: float | None = 60.0,
        watch_timeout: float | None = None,
        watch_buffer: int | None = None,
        continue_ttl: float | None = None,
        eviction_retry_interval: float = 0.5,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(
            grace_seconds=grace_seconds,
            history_limit=history_limit,
            watch_timeout=watch_timeout,
            watch_buffer=watch_buffer,
            continue_ttl=continue_ttl,
            eviction_retry_interval=eviction_retry_interval,
        )
        self.token = token
        self.bookmark_interval = bookmark_interval
        self._address = (host, port)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self._log: list[RecordedRequest] = []
        self._injections: list[_Injection] = []
        #: List items' JSON by (list kind, namespace, name, resourceVersion): ``_encode_list``.
        self._encoded: dict[tuple[Any, ...], bytes] = {}
        #: An object with ``check(method, path, query)`` that raises a 403 ApiError for a
        #: request the caller is not granted; None: everything is allowed.
        self.authorizer: Any = None

    # --- lifecycle

    def start(self) -> FakeKubeAPI:
        httpd = _HTTPServer(self._address, _Handler)
        httpd.api = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-kube-api",
            daemon=True,
        )
        self._thread.start()
        self.start_reaper()
        return self

    def stop(self) -> None:
        """End every watch, stop serving, close every connection."""
        self.stop_reaper()
        self.end_watches()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    def __enter__(self) -> FakeKubeAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start() the server first"
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{self._address[0]}:{self.port}"

    def client_configuration(self) -> kubernetes.client.Configuration:
        """A client Configuration for this server (host and token, as kube_config sets them)."""
        configuration = kubernetes.client.Configuration()
        configuration.host = self.url
        if self.token is not None:
            configuration.api_key["BearerToken"] = f"Bearer {self.token}"
        return configuration

    def api_client(self) -> kubernetes.client.ApiClient:
        return kubernetes.client.ApiClient(self.client_configuration())

    def write_kubeconfig(
        self, path: str | Path, *, context: str = "fake-cluster", namespace: str = "default"
    ) -> Path:
        """Write a kubeconfig (cluster URL, user token, one context) for ``--kubeconfig``."""
        user: Obj = {"token": self.token} if self.token is not None else {}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": context, "cluster": {"server": self.url}}],
            "users": [{"name": f"{context}-user", "user": user}],
            "contexts": [
                {
                    "name": context,
                    "context": {
                        "cluster": context,
                        "user": f"{context}-user",
                        "namespace": namespace,
                    },
                }
            ],
            "current-context": context,
            "preferences": {},
        }
        target = Path(path)
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        return target

    # --- failure injection and records

    def fail_next(
        self,
        method: str,
        path_regex: str,
        code: int,
        times: int = 1,
        *,
        reason: str | None = None,
        message: str = "injected failure",
        retry_after: int | None = None,
    ) -> None:
        """Answer the next ``times`` requests of ``method`` (``"*"``: any) whose path matches
        ``path_regex`` (``re.search``) with a Status of ``code``, before doing anything else;
        ``retry_after`` adds ``retryAfterSeconds`` and the ``Retry-After`` header, as the API
        server's own rate limits (API Priority and Fairness) answer a 429."""
        with self._lock:
            self._injections.append(
                _Injection(
                    method.upper(),
                    re.compile(path_regex),
                    code,
                    times,
                    reason or REASONS.get(code),
                    message,
                    {"retryAfterSeconds": retry_after} if retry_after is not None else None,
                )
            )

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._log)

    def clear_requests(self) -> None:
        with self._lock:
            self._log.clear()

    def eviction_attempts(self, namespace: str, name: str) -> list[int]:
        """The HTTP status of every eviction request for this pod, in order (injected ones too)."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
        with self._lock:
            return [r.status for r in self._log if r.method == "POST" and r.path == path]

    # --- internals: HTTP

    def _track(self, connection: socket.socket, *, add: bool) -> None:
        with self._lock:
            if add:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def _record(
        self,
        handler: _Handler,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any,
        status: int,
    ) -> None:
        content_type = handler.headers.get("Content-Type", "")
        with self._lock:
            self._log.append(RecordedRequest(method, path, query, body, status, content_type))

    def _take_injection(self, method: str, path: str) -> ApiError | None:
        with self._lock:
            for injection in self._injections:
                if injection.method in ("*", method) and injection.pattern.search(path):
                    injection.remaining -= 1
                    if injection.remaining <= 0:
                        self._injections.remove(injection)
                    return ApiError(
                        injection.code, injection.reason, injection.message, injection.details
                    )
        return None

    def _serve(self, handler: _Handler, method: str) -> None:
        """Answer one request. It is logged before the answer is written, so a test that got
        the answer always finds the request in ``requests``."""
        split = urlsplit(handler.path)
        path = split.path
        query = {k: v[-1] for k, v in parse_qs(split.query, keep_blank_values=True).items()}
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        body: Any = raw.decode(errors="replace") or None
        try:
            if self.token is not None and not self._authorized(
                handler.headers.get("Authorization")
            ):
                raise ApiError(401, "Unauthorized", "Unauthorized")
            if self.authorizer is not None:  # RBAC (tests/support/kube/strict_rbac.py)
                self.authorizer.check(method, path, query)
            injected = self._take_injection(method, path)
            if injected is not None:
                raise injected
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError as error:
                    raise bad_request(
                        f"the body of the request could not be decoded as JSON: {error}"
                    ) from None
            # The field manager of this request's writes (managedFields): the User-Agent's name.
            agent = handler.headers.get("User-Agent") or ""
            self._caller.manager = agent.split("/")[0].strip() or "unknown"
            try:
                result = self._route(
                    method, path, query, body, handler.headers.get("Content-Type", "")
                )
            finally:
                self._caller.manager = None
        except ApiError as error:
            result = (error.code, error.status)
        except Exception as error:  # a bug in the fake: answer like the real server, and show it
            traceback.print_exc()
            failure = ApiError(500, "InternalError", f"Internal error occurred: {error!r}")
            result = (500, failure.status)
        status = 200 if isinstance(result, WatchPlan) else result[0]
        self._record(handler, method, path, query, body, status)
        try:
            if isinstance(result, WatchPlan):
                self._stream(handler, result)
            else:
                _write_json(handler, *result, self._encode_list(result[1]))
        except OSError:
            handler.close_connection = True

    def _encode_list(self, payload: Any) -> bytes | None:
        """The JSON of a list answer, its items encoded once per object version and kept (as
        the watch cache keeps an object's serialization, ``cachingObject``): a client that lists
        a big cluster again costs the server no new encoding. None for any other answer."""
        if not (isinstance(payload, dict) and str(payload.get("kind", "")).endswith("List")):
            return None
        items = payload.get("items")
        if not isinstance(items, list):
            return None
        parts: list[bytes] = []
        for item in items:
            meta = item.get("metadata") or {}
            key = (
                payload["kind"],
                meta.get("namespace"),
                meta.get("name"),
                meta.get("resourceVersion"),
            )
            data = self._encoded.get(key)
            if data is None:
                data = json.dumps(item, separators=(",", ":")).encode()
                if len(self._encoded) >= ENCODED_KEPT:
                    self._encoded.clear()
                self._encoded[key] = data
            parts.append(data)
        head = json.dumps(
            {k: v for k, v in payload.items() if k != "items"}, separators=(",", ":")
        ).encode()
        return head[:-1] + b',"items":[' + b",".join(parts) + b"]}"

    def _authorized(self, header: str | None) -> bool:
        if not header:
            return False
        scheme, _, credential = header.partition(" ")
        return scheme.lower() == "bearer" and secrets.compare_digest(
            credential.strip(), str(self.token)
        )

    def _route(
        self, method: str, path: str, query: dict[str, str], body: Any, content_type: str
    ) -> tuple[int, Any] | WatchPlan:
        if path == "/version" and method == "GET":
            return 200, {
                "major": "1",
                "minor": "33",
                "gitVersion": "v1.33.1",
                "gitCommit": "8adc0f041b8e7ad1d30e29cc59c6ae7a15e19828",
                "gitTreeState": "clean",
                "buildDate": "2025-05-15T08:19:08Z",
                "goVersion": "go1.24.2",
                "compiler": "gc",
                "platform": "linux/amd64",
            }
        match = PATH_PATTERN.match(path)
        resource = None
        if match is not None:
            version = match["core"] or f"{match['group']}/{match['version']}"
            resource = BY_PATH.get((version, match["plural"]))
        if (
            match is None
            or resource is None
            or (match["namespace"] is not None and not resource.namespaced)
        ):
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        namespace = unquote(match["namespace"]) if match["namespace"] is not None else None
        name = unquote(match["name"]) if match["name"] is not None else None
        if name is None:
            if method == "GET":
                if truthy(query.get("watch")):
                    return self.rest_watch(resource, namespace, query)
                return 200, self.rest_list(resource, namespace, query)
            if method == "POST" and (namespace is not None or not resource.namespaced):
                return 201, self.rest_create(resource, namespace, body)
            raise ApiError(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        if resource.namespaced and namespace is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        if match["sub"] is not None:
            if resource is PODS and match["sub"] == "eviction" and method == "POST":
                return 201, self.rest_evict(namespace or "", name, body, query)
            raise ApiError(404, "NotFound", "the server could not find the requested resource", {})
        if method == "GET":
            return 200, self.rest_get(resource, namespace, name)
        if method == "PUT":
            return self.rest_replace(resource, namespace, name, body)
        if method == "PATCH":
            return 200, self.rest_patch(resource, namespace, name, body, content_type)
        if method == "DELETE":
            return 200, self.rest_delete(resource, namespace, name, body, query)
        raise ApiError(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )

    def _stream(self, handler: _Handler, plan: WatchPlan) -> None:
        """Write the watch as chunks until its timeout, ``end_watches``, or the client leaves."""
        watcher = plan.watcher
        handler.send_response(200)
        handler.send_header("Audit-Id", str(uuid.uuid4()))
        handler.send_header("Cache-Control", "no-cache, private")
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        deadline = time.monotonic() + plan.timeout if plan.timeout else None
        next_bookmark = (
            time.monotonic() + self.bookmark_interval if self.bookmark_interval else None
        )
        pending: list[tuple[Any, ...]] = list(plan.initial)
        abrupt = False
        try:
            while True:
                if self._holding.is_set():  # nothing reaches the client, not even an end
                    if self._client_gone(handler.connection):
                        handler.close_connection = True
                        return
                    time.sleep(0.02)
                    continue
                if watcher.dropped:  # closed for falling behind: what was buffered is not sent
                    break
                lines: list[bytes] = []
                finished = False
                sent = 0
                for item in pending:
                    if item[0] == END or watcher.dropped:
                        finished, abrupt = True, item[0] == END and bool(item[1])
                        break
                    lines.append(self._event_line(watcher, item))
                    sent += item[0] == "EVENT"
                    if item[0] == "ERROR":
                        finished = True
                        break
                pending = []
                if lines:
                    data = b"".join(lines)
                    handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    with self._lock:
                        watcher.unsent -= sent
                if finished:
                    break
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    break
                if next_bookmark is not None and watcher.bookmarks and now >= next_bookmark:
                    self._bookmark(watcher)
                    next_bookmark = now + (self.bookmark_interval or 0)
                wait = 0.25 if deadline is None else max(0.0, min(0.25, deadline - now))
                try:
                    pending.append(watcher.items.get(timeout=wait))
                except queue.Empty:
                    if self._client_gone(handler.connection):
                        handler.close_connection = True
                        return
                    continue
                while len(pending) < 500:
                    try:
                        pending.append(watcher.items.get_nowait())
                    except queue.Empty:
                        break
            if abrupt:
                handler.close_connection = True
                handler.connection.shutdown(socket.SHUT_RDWR)
            else:
                handler.wfile.write(b"0\r\n\r\n")
        except OSError:
            handler.close_connection = True
        finally:
            with self._lock:
                self._watchers.discard(watcher)

    def _event_line(self, watcher: Watcher, item: tuple[Any, ...]) -> bytes:
        if item[0] == "EVENT":
            payload: Obj = {"type": item[1], "object": item[2]}
        elif item[0] == "BOOKMARK":
            meta: Obj = {"resourceVersion": str(item[1])}
            if item[2]:
                meta["annotations"] = item[2]
            payload = {
                "type": "BOOKMARK",
                "object": {
                    "kind": watcher.resource.kind,
                    "apiVersion": watcher.resource.api_version,
                    "metadata": meta,
                },
            }
        else:
            payload = {"type": "ERROR", "object": item[1]}
        return json.dumps(payload, separators=(",", ":")).encode() + b"\n"

    @staticmethod
    def _client_gone(connection: socket.socket) -> bool:
        try:
            readable, _, _ = select.select([connection], [], [], 0)
            return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True
