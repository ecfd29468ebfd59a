"""``lbaas agent log-keeper``: become the access-log socket keeper of this host's agent,
taking its sockets over while it runs (``lbaas.fleet.log_keeper.exec_take_over``): the
first step of a rolling upgrade from a release whose agent has no keeper. It takes no
state lock (the running agent owns it). Light: the parser is built at every CLI start.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from lbaas.config import Settings


def add_parser(agent_sub: Any, settings_of: Callable[[argparse.Namespace], Settings]) -> None:
    keeper = agent_sub.add_parser(
        "log-keeper", help="hold the running agent's access-log sockets through its restart"
    )

    def run(args: argparse.Namespace) -> int:
        from lbaas.fleet.agent_paths import amphora_root_of
        from lbaas.fleet.log_keeper import exec_take_over

        settings = settings_of(args)
        exec_take_over(settings, amphora_root_of(settings))
        return 1  # not reached: the keeper replaced this process

    keeper.set_defaults(func=run)
