"""The unmodified ``openstack`` CLI (python-openstackclient + octaviaclient) as a user runs it.

No Keystone: ``--os-auth-type none`` and ``--os-endpoint`` pointing at ``lbaas serve``.
Create and update commands are run with ``--wait``, as a user would, so each returns when
the load balancer is ACTIVE again.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

CLI_TIMEOUT = 180.0


def openstack_executable() -> str:
    """The ``openstack`` script of this Python (skipping pyenv's shim when it can)."""
    beside = Path(sys.executable).parent / "openstack"
    if beside.exists():
        return str(beside)
    found = shutil.which("openstack")
    assert found, "python-openstackclient is part of the test dependencies"
    return found


class OpenstackCli:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.base = [openstack_executable(), "--os-auth-type", "none", "--os-endpoint", endpoint]

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], capture_output=True, text=True, timeout=CLI_TIMEOUT, check=False
        )
        assert done.returncode == 0, f"openstack {' '.join(args)} failed: {done.stderr}"
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-f", "json"))

    def value(self, *args: str, column: str) -> str:
        return self.run(*args, "-f", "value", "-c", column).strip()
