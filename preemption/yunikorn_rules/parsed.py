"""What the walk keeps of the kept keys once their types were read: each queue's flags and
limits, and the bounds a limit passes down, for the rules that compare queues with each other."""

from __future__ import annotations

from dataclasses import dataclass, field

from preemption.config import QueueConfig


@dataclass
class ParsedLimit:
    """One entry of a ``limits`` list, as far as its types were right.

    ``owner`` is the queue path whose ``extra`` holds it (None: the partition's) and ``at`` its
    field (``extra.limits[2]``). Names of the right type keep their own fields; ``resources`` is
    None when the ``maxresources`` mapping was invalid, ``applications`` None when
    ``maxapplications`` was.
    """

    owner: str | None
    at: str
    named: bool  # the users or groups list has entries (valid or not)
    users: list[tuple[str, str]] = field(default_factory=list)
    groups: list[tuple[str, str]] = field(default_factory=list)
    resources: dict[str, int] | None = None
    applications: int | None = None


@dataclass
class ParsedQueue:
    """What the hierarchy checks need of one queue."""

    config: QueueConfig
    parent_flag: bool
    applications: int | None  # maxapplications (0 when unset); None when invalid
    limits: list[ParsedLimit] = field(default_factory=list)


#: Per user or group name: ((maxresources, maxapplications), the queue path that set them).
Bounds = dict[str, tuple[tuple[dict[str, int] | None, int | None], str]]
