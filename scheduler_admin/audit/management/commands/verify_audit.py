"""``manage.py verify_audit [--head ID:HASH ...]``: check the audit log's hash chain
(``scheduler_admin.audit.chain``) and name the first broken link: the event, and whether it was
changed, removed or inserted. ``--head`` (repeatable) also checks that the head an earlier export
carried (its ``Audit-Chain-Head``) is still a link of the chain. Exits 1 when the chain is
broken, so a cron job or a monitoring check can run it.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scheduler_admin.audit import chain


class Command(BaseCommand):
    help = (
        "Verify the audit log's hash chain and name the first broken link (changed, removed "
        "or inserted event); --head ID:HASH also checks an earlier export's head."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--head",
            action="append",
            default=[],
            metavar="ID:HASH",
            help="a head an earlier export carried (its Audit-Chain-Head); repeatable",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            heads = [chain.parse_head(text) for text in options["head"]]
        except chain.BadHead as exc:
            raise CommandError(f"--head: {exc}") from None
        verdict = chain.verify(expected_heads=heads)
        head = verdict.head
        if verdict.first_break is None:
            self.stdout.write(
                f"audit chain intact: {verdict.checked} events, "
                f"head event {head.event_id or 'none'} {head.hash}"
            )
            return
        brk = verdict.first_break
        raise CommandError(
            f"audit chain broken at event {brk.event_id} ({brk.problem}, {brk.chain} chain): "
            f"{brk.detail}",
            returncode=1,
        )
