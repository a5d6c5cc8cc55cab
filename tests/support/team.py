"""The "team" partition shared by the enforcement tests (services, API, live loop).

root.team (max 400G, quota delay ``DELAY``) with leaves a (guaranteed 20G) and b; the tasks use
180G, of which b3 (40G) is a DaemonSet pod that is never a quota victim.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tests.support.factories.cluster import task
from tests.support.factories.partitions import GB

__all__ = ["GB", "START", "TEAM_CONFIG", "TEAM_TASKS", "task", "team_config"]
START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

TEAM_CONFIG = """
partitions:
  - name: default
    preemption: {enabled: true, quotapreemptionenabled: true}
    queues:
      - name: root
        queues:
          - name: team
            resources: {max: {memory: 400G}}
            properties: {quota.preemption.delay: DELAY}
            queues:
              - name: a
                resources: {guaranteed: {memory: 20G}}
              - name: b
"""


def team_config(delay: str = "2s") -> str:
    return TEAM_CONFIG.replace("DELAY", delay)


TEAM_TASKS = [
    task("a1", "root.team.a", 30, 1),
    task("a2", "root.team.a", 30, 2),
    task("b1", "root.team.b", 40, 3),
    task("b2", "root.team.b", 40, 4),
    task("b3", "root.team.b", 40, 5, required_node="n1"),
]
