"""Where an agent keeps its amphorae and their access-log sockets, decided in one place:
the agent (``agent_service``) and ``serve``'s early hold of those sockets
(``after_listening.hold_embedded_access_logs``) must name the same directories, short
root included, or the sockets serve holds are not the ones the agent adopts.

Light on imports: serve calls it before anything else starts.
"""

from __future__ import annotations

import os
from pathlib import Path

from lbaas.amphora.short_root import LOGS_SUFFIX, short_root
from lbaas.amphora.socket_room import check_socket_room
from lbaas.config import Settings

#: The amphorae's directories, under the state directory.
AMPHORAE = "amphorae"


def access_log_sockets(settings: Settings, amphora_root: Path) -> Path:
    """Where the amphorae's access-log sockets are. As root HAProxy's workers drop to their
    own user, who cannot cross the 0700 state directory; otherwise they run as this
    agent's user and the state directory does: ``<amphora_root>-logs``."""
    if os.geteuid() == 0:
        return settings.access_log.socket_directory
    return amphora_root.with_name(amphora_root.name + LOGS_SUFFIX)


def amphora_root_of(settings: Settings) -> Path:
    """The amphorae's directory as HAProxy will name it: ``<state>/amphorae``, or its short
    link when that is too long for HAProxy's sockets (``short_root``); CommandRefused
    when even that leaves no room."""
    state_dir = settings.state_dir.absolute()
    root = short_root(state_dir / AMPHORAE)
    check_socket_room(state_dir, root, access_log_sockets(settings, root))
    return root
