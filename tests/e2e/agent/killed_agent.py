"""One agent life that is killed with SIGKILL exactly between install and reload.

Run as ``python killed_agent.py ROOT AMPHORA SPEC.json...``: it adopts what ROOT holds,
applies each spec in turn, and the first apply that reaches a reload kills this process
after the new configuration file was installed and before HAProxy was told to load it,
which is the window in which an agent crash used to leave a file HAProxy never loaded.
The fault is injected through the ``HostOps`` handed to the manager; nothing is patched.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.host.base import HaproxyFiles
from lbaas.host.loopback import LoopbackHostOps
from lbaas.wire.amphora import AmphoraSpec


class KilledAtReload(LoopbackHostOps):
    """Real HAProxy processes; the agent process dies where it would reload."""

    def reload_haproxy(self, files: HaproxyFiles) -> None:
        os.kill(os.getpid(), signal.SIGKILL)


def main(argv: list[str]) -> None:
    root, amphora_id, *specs = argv
    manager = AmphoraRegistry(Path(root), KilledAtReload())
    manager.restore()
    for spec in specs:
        manager.put(amphora_id, AmphoraSpec.model_validate_json(Path(spec).read_bytes()))


if __name__ == "__main__":
    main(sys.argv[1:])
