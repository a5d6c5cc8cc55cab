"""``scheduler-admin-agent`` / ``python -m scheduler_admin_agent``: run the cluster agent."""

from __future__ import annotations

import logging
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from scheduler_admin_agent.memory import tune_collector
from scheduler_admin_agent.options import parse_options


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    logging.basicConfig(
        level=options.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    from scheduler_admin_agent.agent import Agent  # after logging: the client logs on import

    try:
        agent = Agent(options)
    except Exception as error:  # no cluster to talk to: say so and stop
        print(f"scheduler-admin-agent: cannot reach the cluster: {error}", file=sys.stderr)
        return 1

    problem = agent.memory_problem()
    if problem:
        print(f"scheduler-admin-agent: {problem}", file=sys.stderr)
        return 1

    def stop(signum: int, frame: FrameType | None) -> None:
        logging.getLogger(__name__).info("signal %s: stopping", signal.Signals(signum).name)
        agent.stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    tune_collector()
    agent.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
