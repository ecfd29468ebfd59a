"""The Ansible ``openstack.cloud`` collection (bundled in PyPI's ``ansible``), unmodified.

``ansible/loadbalancer.yml`` builds load balancer → listener → pool → two members →
health monitor against ``lbaas serve`` with ``auth_type: none``; the second run must
change nothing; ``state=absent`` then deletes everything.

openstack.cloud 2.5.0 reads ``openstack.version`` after a bare ``import openstack``;
openstacksdk stopped importing that submodule there in 4.15, and the openstack CLI of
this suite needs openstacksdk >= 4.21. The modules' interpreter therefore gets a
``sitecustomize`` that imports it first (a shim between two third-party packages; no
lbaas code is touched).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.conftest import Served

pytestmark = [pytest.mark.slow]
PLAYBOOK = Path(__file__).parent / "ansible" / "loadbalancer.yml"
RECAP = re.compile(r"ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)")


def _environment(tmp_path: Path, url: str) -> dict[str, str]:
    (tmp_path / "clouds.yaml").write_text(
        f"clouds:\n  lbaas:\n    auth_type: none\n    auth:\n      endpoint: {url}\n"
    )
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text("import openstack.version  # noqa: F401\n")
    return {
        **os.environ,
        "PYTHONPATH": str(shim),
        "OS_CLIENT_CONFIG_FILE": str(tmp_path / "clouds.yaml"),
        "ANSIBLE_LOCALHOST_WARNING": "false",
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
    }


def _play(env: dict[str, str], state: str) -> tuple[int, int]:
    """Run the playbook; return (ok, changed) from its recap, failing on any failure."""
    playbook_cmd = shutil.which("ansible-playbook", path=str(Path(sys.executable).parent))
    assert playbook_cmd is not None, "ansible is not installed (pip install -e '.[test]')"
    done = subprocess.run(
        [
            playbook_cmd,
            "-e",
            f"ansible_python_interpreter={sys.executable}",
            "-e",
            f"state={state}",
            str(PLAYBOOK),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    recap = RECAP.search(done.stdout)
    assert done.returncode == 0 and recap is not None, done.stdout[-4000:] + done.stderr[-2000:]
    ok, changed, unreachable, failed = (int(g) for g in recap.groups())
    assert (unreachable, failed) == (0, 0), done.stdout[-4000:]
    return ok, changed


def test_playbook_builds_keeps_and_deletes_a_tree(noop_server: Served, tmp_path: Path) -> None:
    env = _environment(tmp_path, noop_server.url)
    lbs = noop_server.url + "/v2/lbaas/loadbalancers"

    assert _play(env, "present") == (5, 5)
    [lb] = httpx.get(lbs).json()["loadbalancers"]
    assert (lb["name"], lb["provisioning_status"]) == ("ansible-lb", "ACTIVE")
    [pool] = httpx.get(noop_server.url + "/v2/lbaas/pools").json()["pools"]
    assert len(pool["members"]) == 2 and pool["healthmonitor_id"]

    assert _play(env, "present") == (5, 0)

    assert _play(env, "absent") == (5, 5)
    assert httpx.get(lbs).json()["loadbalancers"] == []
    assert httpx.get(noop_server.url + "/v2/lbaas/pools").json()["pools"] == []
