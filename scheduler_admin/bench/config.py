"""Section ``config``: the largest config the size cap allows (``CONFIG_MAX_BYTES``, 5 MiB:
some 18,000 queues, ``bench.big_config``) imported, previewed and replaced over the API.

Each figure is one request through the whole stack (the Django test client, token auth, DRF),
as ``PUT .../config.yaml`` takes it: read and validate the YAML, then save (a new partition,
then every leaf changed) or preview. They are what ``WEB_TIMEOUT`` and ``REQUEST_DEADLINE``
are sized by (``base.timeouts``): the goal is a quarter of the default deadline, so a
machine four times busier than this one still answers in time. The baseline is reading the
same YAML alone (``yaml_io.load_yaml_text``), the floor of any of these requests.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings

from scheduler_admin.base.timeouts import DEFAULT_WEB_TIMEOUT, default_deadline
from scheduler_admin.bench.big_config import big_queues_yaml, queue_count
from scheduler_admin.bench.harness import Row, once, timed
from scheduler_admin.queues.yaml_io import load_yaml_text

PARTITION = "big"
URL = f"/api/v1/partitions/{PARTITION}/config.yaml"
#: A quarter of the default request deadline, in seconds.
GOAL = default_deadline(DEFAULT_WEB_TIMEOUT) / 4


def rows(context) -> Iterator[Row]:
    admin = context.api_client("admin")
    first = big_queues_yaml(PARTITION, settings.CONFIG_MAX_BYTES).encode()
    second = big_queues_yaml(PARTITION, settings.CONFIG_MAX_BYTES, leaf_memory="17Gi").encode()
    size = f"{len(first) / 2**20:.2f} MiB, {queue_count(first.decode()):,} queues"
    baseline = timed(lambda: load_yaml_text(first), runs=3)
    base = "read the YAML alone"

    def put(body: bytes, query: str, wanted: int) -> None:
        response = admin.put(f"{URL}?{query}", body, content_type="application/yaml")
        assert response.status_code == wanted, response.content[:500]

    yield Row(
        "PUT config.yaml 5 MiB: a new partition", once(lambda: put(first, "comment=x", 201)),
        "s", baseline, base, goal=GOAL, note=size,
    )  # fmt: skip
    version = admin.get(f"/api/v1/partitions/{PARTITION}/").json()["version"]
    yield Row(
        "PUT config.yaml 5 MiB ?dry_run=true, every leaf changed",
        timed(lambda: put(second, "dry_run=true", 200), runs=3), "s", baseline, base, goal=GOAL,
    )  # fmt: skip
    yield Row(
        "PUT config.yaml 5 MiB: every leaf changed, saved",
        once(lambda: put(second, f"version={version}&comment=y", 200)), "s", baseline, base,
        goal=GOAL,
    )  # fmt: skip
