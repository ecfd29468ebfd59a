"""Where the real OpenStack services the tests run are installed.

`./quickstart test` builds ``.venv-openstack`` beside the checkout from
``requirements/openstack.txt`` (Keystone, Octavia, tempest, Horizon: pins of their own,
so not in lbaas's environment). ``LBAAS_OPENSTACK_VENV`` names another one, for a second
worktree of the same checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def openstack_venv() -> Path:
    """The environment's directory; fails, saying how to build it, when it is missing."""
    venv = Path(os.environ.get("LBAAS_OPENSTACK_VENV") or ROOT / ".venv-openstack")
    if not (venv / "bin" / "python").exists():
        raise RuntimeError(
            f"no OpenStack environment at {venv}: `./quickstart test` builds it from "
            "requirements/openstack.txt (or set LBAAS_OPENSTACK_VENV)"
        )
    return venv


def openstack_command(name: str) -> str:
    """The path of one of its commands (``keystone-manage``, ``octavia-api``, ``tempest``)."""
    path = openstack_venv() / "bin" / name
    if not path.exists():
        raise RuntimeError(f"{path} is missing: rebuild the environment with ./quickstart test")
    return str(path)
