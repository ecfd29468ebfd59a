"""What every control host of a lab must hold alike: the fleet's CA and the KEK.

Control hosts share nothing but the network, yet all of them must trust the same agents
and open the same sealed secrets: the CA the enrolments issued the agents' identities from
(``<state_dir>/pki``: the CA and the controller's client identity, with which every worker
calls the agents) and the key-encryption key (``<state_dir>/keymanager.kek``; an API that
finds none makes its own, which the other hosts could not open). The first control host's
are copied into the others' state directories before any of them starts, as an operator
installs the same files on each host (docs/operations.md).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from lbaas.certs.kek import KeyRing, create_key_ring

PKI = "pki"
KEK_FILE = "keymanager.kek"


def share_control_secrets(directories: Sequence[Path]) -> None:
    """Give every state directory in ``directories`` the first one's CA and KEK."""
    if len(directories) < 2:
        return  # one control host makes its own at first start
    first, *others = directories
    create_key_ring(first / KEK_FILE, KeyRing.generate())
    for directory in others:
        shutil.copytree(first / PKI, directory / PKI, dirs_exist_ok=True)
        shutil.copy2(first / KEK_FILE, directory / KEK_FILE)
