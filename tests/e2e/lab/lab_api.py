"""The lab's Octavia API, reached as a lab user reaches it: curl inside ``<lab>-ctl``.

The API listens on 127.0.0.1 of the control namespace, so nothing of it is visible from the
test's own namespace; each call runs ``ip netns exec <lab>-ctl curl``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from lbaas.lab.lab import Lab
from lbaas.lab.services import services_status
from lbaas.model.enums import LIVE_AMPHORA_STATUSES, HostStatus, ProvisioningStatus
from tests.support.waiting import wait_until

V2 = "/v2/lbaas"


class LabApi:
    def __init__(self, namespace: str, url: str) -> None:
        self.namespace = namespace
        self.url = url

    def call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        argv = ["ip", "netns", "exec", self.namespace, "curl", "-sS", "-X", method]
        argv += ["-w", "\n%{http_code}", f"{self.url}{path}"]
        if body is not None:
            argv += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, f"{method} {path}: {done.stderr}"
        text, _, code = done.stdout.rpartition("\n")
        assert code.startswith("2"), f"{method} {path}: {code} {text}"
        return json.loads(text) if text else None

    def status_of(self, lb_id: str) -> str:
        return str(
            self.call("GET", f"{V2}/loadbalancers/{lb_id}")["loadbalancer"]["provisioning_status"]
        )

    def wait_active(self, lb_id: str) -> None:
        wait_until(
            lambda: self.status_of(lb_id) == ProvisioningStatus.ACTIVE,
            timeout=60,
            what=f"load balancer {lb_id} ACTIVE",
        )

    def create(self, lb_id: str, kind: str, body: dict[str, Any]) -> str:
        """POST ``kind`` (listeners, pools, pools/<id>/members) and wait for ACTIVE; its id."""
        key = kind.rsplit("/", 1)[-1].rstrip("s")
        created = self.call("POST", f"{V2}/{kind}", {key: body})[key]
        self.wait_active(lb_id)
        return str(created["id"])

    def hosts_of(self, lb_id: str) -> list[str]:
        """The hosts (``compute_id``) of the load balancer's live amphorae."""
        path = f"/v2/octavia/amphorae?loadbalancer_id={lb_id}"
        amphorae = self.call("GET", path)["amphorae"]
        return [str(a["compute_id"]) for a in amphorae if a["status"] in LIVE_AMPHORA_STATUSES]


def host_list(namespace: str, settings: str | Path, code: str = "") -> dict[str, dict[str, Any]]:
    """``lbaas host list --json`` run in the control namespace, as an operator runs it;
    ``code``: from that source tree (``lbaas.lab.upgrade``; a newer CLI refuses an older
    schema), run in it so that ``-m`` finds its ``lbaas`` first. Its settings are the
    file's alone, as the lab's processes' are."""
    lbaas = [sys.executable, "-m", "lbaas.cli", "--config", str(settings), "host", "list", "--json"]
    argv = ["ip", "netns", "exec", namespace, *lbaas]
    # As the lab's processes: no LBAAS_* of the caller's (an older tree refuses the
    # settings it does not know, LBAAS_OPENSTACK_VENV's openstack_venv among them).
    env = {k: v for k, v in os.environ.items() if not k.startswith("LBAAS_")}
    if code:
        env["PYTHONPATH"] = code
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, check=False, env=env, cwd=code or None
    )
    if done.returncode != 0:
        raise subprocess.CalledProcessError(done.returncode, argv, done.stdout, done.stderr)
    return {host["host_id"]: host for host in json.loads(done.stdout)}


def lab_api_when_up(lab: Lab, hosts: int) -> tuple[dict[str, Any], LabApi]:
    """A lab whose services were just started: its services and its API, once the ``hosts``
    agents are UP in the hosts registry."""
    services = services_status(lab)
    wait_until(
        lambda: (
            [h["status"] for h in host_list(lab.names.control, services["settings"]).values()]
            == [HostStatus.UP] * hosts
        ),
        timeout=60,
        what=f"the {hosts} hosts UP",
    )
    return services, LabApi(services["api_namespace"], services["api"])
