"""Config out: put the partition's saved config where YuniKorn reads it.

YuniKorn's shim watches the ConfigMap ``yunikorn-configs`` (namespace of the scheduler) and
reloads ``queues.yaml`` from it. When publishing is on (``--publish-config``; off by default, so
a first look at a cluster changes nothing in it) and the product has a revision the cluster
does not run yet, the agent fetches ``config.yaml?publish=true`` (the export with YuniKorn's own
quota preemption left off: the product enforces quota decreases) and writes it into the
ConfigMap's key (``queues.yaml``), keeping the other keys as they are.

YuniKorn reads a gzip-compressed ``queues.yaml.gz`` in the ConfigMap's ``binaryData`` in
preference to ``data``: while one is there, a revision written into ``data`` would not take
effect, so the agent reports the cluster's revision as unknown and refuses to publish, saying
why. A write the API server refuses (an admission webhook, the 1 MiB object limit, RBAC) is
reported and not tried again before a backoff (doubling up to five minutes).

The write is optimistic: read the ConfigMap, change the key, replace it with the
``resourceVersion`` read. If someone else changed it in between the API server answers 409
Conflict and the agent reads it again and retries. The revision written is kept in the
ConfigMap's annotation ``scheduler-admin.io/revision``, which is how the agent (also a
restarted one, also in read-only mode) tells the product which revision the cluster runs.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from scheduler_admin_agent.product import ProductClient

logger = logging.getLogger(__name__)

REVISION_ANNOTATION = "scheduler-admin.io/revision"
#: Attempts of one publication when others keep changing the ConfigMap.
CONFLICT_RETRIES = 5
#: Longest wait after a refused write before writing again.
MAX_WRITE_BACKOFF = 300.0


class PublishError(Exception):
    pass


class ConfigPublisher:
    def __init__(
        self,
        api: client.ApiClient,
        product: ProductClient,
        *,
        namespace: str,
        name: str,
        key: str,
        enabled: bool,
    ) -> None:
        self.core = client.CoreV1Api(api)
        self.product = product
        self.namespace, self.name, self.key = namespace, name, key
        self.enabled = enabled
        #: The revision the ConfigMap holds (None: unknown, or never published).
        self.running_revision: int | None = None
        self.conflicts = 0
        #: Set when the ConfigMap's binaryData holds ``<key>.gz``, which YuniKorn reads instead.
        self.shadowed = False
        #: Refused writes in a row, and the monotonic time before which none is tried again.
        self.refusals = 0
        self.not_before = 0.0
        self.last_refusal = ""

    def sync(self, newest_revision: int | None) -> None:
        """Read which revision the cluster runs; publish ``newest_revision`` if enabled and the
        cluster runs another."""
        self.running_revision = self._read_running()
        if not self.enabled or newest_revision is None:
            return
        if self.shadowed:
            raise PublishError(
                f"ConfigMap {self.namespace}/{self.name} holds {self.key}.gz in binaryData, which "
                f"YuniKorn reads instead of data.{self.key}: a published revision would not take "
                "effect. Remove that key to publish."
            )
        if self.running_revision == newest_revision:
            return
        if time.monotonic() < self.not_before:
            raise PublishError(self.last_refusal)  # still shown, not tried again yet
        text, revision = self.product.publishable_config()
        try:
            self.publish(text, revision)
        except ApiException as error:
            self.refusals += 1
            wait = min(MAX_WRITE_BACKOFF, 2.0**self.refusals)
            self.not_before = time.monotonic() + wait
            self.last_refusal = (
                f"writing ConfigMap {self.namespace}/{self.name} was refused ({error.status}: "
                f"{_message(error)}); trying again in {wait:g} s"
            )
            raise PublishError(self.last_refusal) from error
        self.refusals = 0

    def _read_running(self) -> int | None:
        try:
            configmap = self.core.read_namespaced_config_map(
                self.name, self.namespace, _request_timeout=(5, 30)
            )
        except ApiException as error:
            if error.status in (403, 404):
                return None
            raise
        self.shadowed = f"{self.key}.gz" in (configmap.binary_data or {})
        return None if self.shadowed else _revision_of(configmap)

    def publish(self, text: str, revision: int | None) -> None:
        for _ in range(CONFLICT_RETRIES):
            try:
                configmap = self.core.read_namespaced_config_map(
                    self.name, self.namespace, _request_timeout=(5, 30)
                )
            except ApiException as error:
                if error.status != 404:
                    raise
                self._create(text, revision)
                return
            data = dict(configmap.data or {})
            if data.get(self.key) == text and _revision_of(configmap) == revision:
                self.running_revision = revision
                return
            data[self.key] = text
            configmap.data = data
            annotations = dict(configmap.metadata.annotations or {})
            if revision is not None:
                annotations[REVISION_ANNOTATION] = str(revision)
            configmap.metadata.annotations = annotations
            try:
                self.core.replace_namespaced_config_map(
                    self.name, self.namespace, configmap, _request_timeout=(5, 30)
                )
            except ApiException as error:
                if error.status == 409:  # changed since we read it: read again
                    self.conflicts += 1
                    logger.info("ConfigMap %s changed meanwhile (409); reading it again", self.name)
                    continue
                raise
            self.running_revision = revision
            logger.info("published revision %s into %s/%s", revision, self.namespace, self.name)
            return
        raise PublishError(
            f"ConfigMap {self.namespace}/{self.name} kept changing: gave up after "
            f"{CONFLICT_RETRIES} conflicts"
        )

    def _create(self, text: str, revision: int | None) -> None:
        annotations = {REVISION_ANNOTATION: str(revision)} if revision is not None else {}
        body = client.V1ConfigMap(
            metadata=client.V1ObjectMeta(
                name=self.name, namespace=self.namespace, annotations=annotations
            ),
            data={self.key: text},
        )
        self.core.create_namespaced_config_map(self.namespace, body, _request_timeout=(5, 30))
        self.running_revision = revision
        logger.info("created %s/%s with revision %s", self.namespace, self.name, revision)


def _revision_of(configmap: Any) -> int | None:
    value = (configmap.metadata.annotations or {}).get(REVISION_ANNOTATION, "")
    return int(value) if value.isdigit() else None


def _message(error: ApiException) -> str:
    """The message of the API server's Status, else its reason phrase."""
    try:
        status = json.loads(error.body or "")
    except (TypeError, ValueError):
        status = None
    if isinstance(status, dict) and status.get("message"):
        return str(status["message"])
    return str(error.reason)
