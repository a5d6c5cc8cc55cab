"""The largest config the size cap allows: a ``queues.yaml`` of just under ``CONFIG_MAX_BYTES``.

Tenants of 100 leaf queues each, every queue with a guarantee, a max and properties, every leaf
with a quota delay and a submit ACL (a kept YuniKorn key): about 18,000 queues in 5 MiB, the
shape of a large real config. Used by the bench's ``config`` section and by the test that
imports it through gunicorn on a loaded machine (``tests/integration/test_large_config.py``).
"""

from __future__ import annotations

#: Leaf queues per tenant.
LEAVES_PER_TENANT = 100


def big_queues_yaml(partition: str, max_bytes: int, *, leaf_memory: str = "16Gi") -> str:
    """A valid ``queues.yaml`` of ``partition`` as close to ``max_bytes`` as whole tenants
    allow (never over it). ``leaf_memory`` is every leaf's memory max, so a second document
    that differs from the first in every leaf is one argument away."""
    head = [f"partitions:\n  - name: {partition}\n    queues:\n      - name: root\n"]
    head.append("        queues:\n")
    size = sum(len(part) for part in head)
    blocks: list[str] = []
    tenant = 0
    while True:
        block = _tenant(tenant, leaf_memory)
        if size + len(block) > max_bytes:
            break
        blocks.append(block)
        size += len(block)
        tenant += 1
    return "".join(head + blocks)


def _tenant(number: int, leaf_memory: str) -> str:
    lines = [
        f"          - name: t{number:03d}\n",
        "            resources:\n",
        "              guaranteed: {vcore: '200', memory: 800Gi}\n",
        "              max: {vcore: '400', memory: 1600Gi}\n",
        "            properties: {preemption.policy: fence}\n",
        "            queues:\n",
    ]
    for leaf in range(LEAVES_PER_TENANT):
        lines += [
            f"              - name: q{leaf:03d}\n",
            "                resources:\n",
            "                  guaranteed: {vcore: '1', memory: 4Gi}\n",
            f"                  max: {{vcore: '4', memory: {leaf_memory}}}\n",
            "                properties: {quota.preemption.delay: 10m, preemption.delay: 30s}\n",
            "                submitacl: 'alice,bob devs'\n",
        ]
    return "".join(lines)


def queue_count(text: str) -> int:
    """How many queues ``big_queues_yaml`` wrote (root included; the partition's own
    ``- name:`` line is not a queue)."""
    return text.count("- name: ") - 1
