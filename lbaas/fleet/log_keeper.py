"""The agent's access-log socket keeper (``lbaas.amphora.socket_keeper``), put together
from the settings: where its control socket is, where it logs, and attaching to it.

The control socket lives in the agent's amphora root (``<root>/.log-keeper.sock``, 0600,
in a directory of the agent's own): one keeper per agent, as the held sockets are per
agent (``HeldLogSockets``); ``lbaas cleanup`` finds it by that path on its command line.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from lbaas.amphora.keeper_client import KeeperClient, attach
from lbaas.amphora.keeper_protocol import CONTROL_NAME
from lbaas.config import Settings
from lbaas.fleet.agent_paths import access_log_sockets
from lbaas.host.log_keeper_exec import keeper_argv, start_keeper

log = logging.getLogger(__name__)

LOG_FILE = "log-keeper.log"


def control_path(amphora_root: Path) -> Path:
    return amphora_root / CONTROL_NAME


def attach_keeper(settings: Settings, amphora_root: Path) -> KeeperClient | None:
    """This agent's keeper (started now if none answers); None when turned off
    (``agent.log_socket_keeper``) or when it would not start."""
    if not settings.agent.log_socket_keeper:
        return None
    amphora_root.mkdir(mode=0o700, parents=True, exist_ok=True)
    control = control_path(amphora_root)
    log_file = settings.state_dir.absolute() / LOG_FILE
    return attach(control, lambda: start_keeper(control, log_file))


def exec_take_over(settings: Settings, amphora_root: Path) -> None:
    """Become a keeper taking over every access-log socket of this host's agent while
    it runs (``lbaas agent log-keeper``: a rolling upgrade from a release without one)."""
    amphora_root.mkdir(mode=0o700, parents=True, exist_ok=True)
    sockets = access_log_sockets(settings, amphora_root)
    argv = keeper_argv(control_path(amphora_root), "--take-over", str(sockets), str(amphora_root))
    os.execv(argv[0], argv)
