"""Section ``api``: the queues API and the quota preview at 5,059 queues / 200,000 tasks.

Every figure is a request through the whole stack (middleware, token auth, DRF) with the
Django test client, median of several after a warm-up; the baseline is the partition detail
(``GET .../partitions/bench/``), a bare read through the same stack, measured in the same run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from scheduler_admin.bench.harness import Row, once, timed

API = "/api/v1/partitions/bench"
LEAF = "root.t05.g03.q07"
PARENT = "root.t05"
#: A lower max for ``LEAF``: above its guarantee (2 vcore, 8Gi, as a quota delay requires),
#: below its usage in vcore (about 4.6 cores of about 46 tasks).
LOWER = {"vcore": "2100m", "memory": "9Gi"}
#: The big preview: running tasks below the tenant, and how far its max goes below its usage.
BIG_TASKS = 95_000
BIG_OVER_BY = 500_000


def _ms(call: Callable[[], object], runs: int = 7) -> float:
    return timed(call, runs=runs) * 1000


def _get(client, url: str) -> Callable[[], object]:
    def call() -> object:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        return response

    return call


def rows(context) -> Iterator[Row]:
    viewer = context.api_client("viewer")
    operator = context.api_client("operator")
    bare = "bare view: GET partition detail"
    baseline = _ms(_get(viewer, f"{API}/"), runs=15)

    for label, path in (("leaf", LEAF), ("parent", PARENT), ("root (sums every task)", "root")):
        yield Row(
            f"GET queues/{{path}}/ {label}", _ms(_get(viewer, f"{API}/queues/{path}/")), "ms",
            baseline, bare, goal=30,
        )  # fmt: skip

    count = len(context.config.queues)
    middle = (count // 50) // 2
    for label, query in (
        ("first page (root and t00)", ""),
        (f"page {middle} of {-(-count // 50)}", f"?page={middle}"),
        (f"?under={PARENT} (first page)", f"?under={PARENT}"),
    ):
        yield Row(
            f"GET queues/ {label}", _ms(_get(viewer, f"{API}/queues/{query}")), "ms",
            baseline, bare, goal=150,
        )  # fmt: skip

    version = viewer.get(f"{API}/queues/{LEAF}/").json()["version"]

    def dry_run() -> object:
        response = operator.patch(
            f"{API}/queues/{LEAF}/?dry_run=true",
            {"max": LOWER, "version": version, "comment": "bench"},
            format="json",
        )
        body = response.json()
        assert response.status_code == 200 and body["plans"], body
        return response

    plan = dry_run().json()["plans"][0]
    yield Row(
        "PATCH queues/{leaf}/?dry_run=true lowering max", _ms(dry_run, runs=5), "ms",
        baseline, bare, goal=300,
        note=f"plan {plan['outcome']}, {len(plan['victims'])} victims, "
        f"{len(plan['explanations'])} candidates explained",
    )  # fmt: skip

    admin = context.api_client("admin")
    body = admin.get(f"{API}/config").json()
    for queue in body["queues"]:
        if queue["path"] == LEAF:
            queue["max"] = LOWER

    def put_dry_run() -> object:
        response = admin.put(f"{API}/config?dry_run=true", body, format="json")
        assert response.status_code == 200 and response.json()["plans"], response.json()
        return response

    yield Row(
        "PUT config?dry_run=true, whole body, leaf max lowered", _ms(put_dry_run, runs=5),
        "ms", baseline, bare, goal=None, note=f"{count:,} queues in the body",
    )  # fmt: skip

    # A real save that starts no timer (a guarantee, not the max): toggled between two values
    # and left as it was.
    guarantees = [{"vcore": "1900m", "memory": "8Gi"}, {"vcore": "2", "memory": "8Gi"}]
    saved = {"version": version, "turn": 0}

    def save() -> object:
        response = operator.patch(
            f"{API}/queues/{LEAF}/",
            {"guaranteed": guarantees[saved["turn"] % 2], "version": saved["version"],
             "comment": "bench"},
            format="json",
        )  # fmt: skip
        assert response.status_code == 200, response.json()
        saved["version"] = response.json()["version"]
        saved["turn"] += 1
        return response

    figure = _ms(save, runs=5)
    if saved["turn"] % 2:
        save()  # back to the guarantee it had
    yield Row("PATCH queues/{leaf}/ saved (guarantee)", figure, "ms", baseline, bare, goal=None)

    def simulate() -> object:
        response = viewer.post(
            f"{API}/simulate", {"policy": "quota", "queue": LEAF, "max": LOWER}, format="json"
        )
        assert response.status_code == 200, response.json()
        return response

    yield Row("POST simulate (quota, leaf)", _ms(simulate, runs=5), "ms", baseline, bare, goal=300)

    yield from _big_preview(context, operator, viewer, baseline, bare)


def _big_preview(context, operator, viewer, baseline: float, bare: str) -> Iterator[Row]:
    """The preview of lowering the max of a tenant with ``BIG_TASKS`` running tasks below it
    (``data.big_tenant``) by ``BIG_OVER_BY``: every task is a candidate of the plan; the answer
    lists the first ones, and the note gives the time of ``?explanations=all`` (all of them)."""
    from scheduler_admin.bench.data import BIG_MEMORY_MAX, BIG_TENANT, big_tenant

    with big_tenant(context.partition, BIG_TASKS) as usage:
        url = f"{API}/queues/{BIG_TENANT}/"
        version = viewer.get(url).json()["version"]
        change = {
            "max": {"vcore": f"{usage - BIG_OVER_BY}m", "memory": str(BIG_MEMORY_MAX)},
            "version": version,
            "comment": "bench",
        }

        def preview(query: str = "") -> object:
            response = operator.patch(f"{url}?dry_run=true{query}", change, format="json")
            assert response.status_code == 200 and response.json()["plans"], response.json()
            return response

        [plan] = preview().json()["plans"]
        every = once(lambda: preview("&explanations=all")) * 1000
        cpu = time.process_time()
        figure = _ms(preview, runs=3)
        cpu = (time.process_time() - cpu) / 4 * 1000  # the warm-up and three timed calls
        yield Row(
            f"preview of a {BIG_TASKS:,}-task tenant (PATCH ?dry_run=true)",
            figure, "ms", baseline, bare, goal=1000,
            note=f"plan {plan['outcome']}, {len(plan['victims']):,} victims, "
            f"{plan['explanation_count']:,} candidates, {len(plan['explanations']):,} explained "
            f"inline; this process's CPU time {cpu:,.0f} ms a preview (the rest waits on "
            f"PostgreSQL or the machine's other work); with ?explanations=all: {every:,.0f} ms",
        )  # fmt: skip
