"""Entry point of ``python -m scheduler_admin.bench`` (see the package docstring)."""

from __future__ import annotations

import argparse
import importlib
import sys
import time

from scheduler_admin.bench.harness import Row, print_header, print_row

#: Sections in the order they run: read-only ones first, then those that change the data.
SECTIONS = ["engine", "api", "sweep", "runs", "acks", "config", "ingest"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=(__package__ or "bench") + ": the product at scale"
    )
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only these")
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--database", default="scheduler_bench_scale")
    parser.add_argument("--keep", action="store_true", help="do not drop the database")
    args = parser.parse_args(argv)
    sections = [name for name in SECTIONS if not args.only or name in args.only]

    from scheduler_admin.bench import data

    with data.scratch_database(args.database, keep=args.keep):
        started = time.perf_counter()
        context = data.build(args.tasks)
        print(
            f"data: {len(context.config.queues):,} queues, {data.NODES:,} nodes, "
            f"{args.tasks:,} tasks (built in {time.perf_counter() - started:.0f} s)",
            flush=True,
        )
        print_header()
        rows: list[Row] = []
        for name in sections:
            module = importlib.import_module(f"scheduler_admin.bench.{name}")
            for row in module.rows(context):
                print_row(row)
                rows.append(row)
        missed = [row.name for row in rows if not row.meets_goal]
        print(f"{len(rows) - len(missed)} of {len(rows)} rows at or under their goal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
