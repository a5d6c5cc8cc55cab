"""What a saved config causes in the apps above queues, without queues importing them.

A saved change starts, resets and cancels quota timers, and timers are the enforcement app's
(above queues: enforcement reads the queues, never the other way). Two ways were open:

- a service of the higher layer composes both (``enforcement`` offers "save a config" that saves
  and then applies the timers). Every writer of configs (the API, the console, imports, reverts,
  the CLI) would then have to call that one instead of ``queues.services``, and the timers must
  be written in the save's own transaction, under its partition lock (``base.lock_order``, level
  2 before level 4), which the composing service could only get by reaching into the save;
- the save offers a hook, and enforcement registers its receiver at start-up
  (``EnforcementConfig.ready``). The save stays the one verb with one transaction, and calls
  each receiver inside it, so a change and its timers are saved together or not at all.

The second is chosen. The receivers are called in order of registration, with the change's
partition, the config before and after, the time, the actor and the new revision's number.
``config_saved`` refuses to run without a receiver: a save that silently started no timer would
be a quiet bug, and the enforcement app is always installed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from django.contrib.auth.models import AbstractBaseUser

from preemption.config import PartitionConfig
from scheduler_admin.queues.models import Partition


class ConfigSavedReceiver(Protocol):
    def __call__(
        self,
        partition: Partition,
        before: PartitionConfig,
        after: PartitionConfig,
        *,
        at: datetime,
        actor: AbstractBaseUser | None,
        revision_number: int,
    ) -> None: ...


_receivers: list[ConfigSavedReceiver] = []


def on_config_saved(receiver: ConfigSavedReceiver) -> ConfigSavedReceiver:
    """Register ``receiver`` (once; registering it again changes nothing)."""
    if receiver not in _receivers:
        _receivers.append(receiver)
    return receiver


def config_saved(
    partition: Partition,
    before: PartitionConfig,
    after: PartitionConfig,
    *,
    at: datetime,
    actor: AbstractBaseUser | None,
    revision_number: int,
) -> None:
    """Call every receiver, inside the save's transaction."""
    if not _receivers:
        raise RuntimeError("No receiver of config saves: is the enforcement app installed?")
    for receiver in _receivers:
        receiver(partition, before, after, at=at, actor=actor, revision_number=revision_number)


__all__ = ["ConfigSavedReceiver", "config_saved", "on_config_saved"]
