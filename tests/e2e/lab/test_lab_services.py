"""lbaas across the lab's hosts for real: control plane in ``<lab>-ctl``, an agent per host.

A load balancer is created through the API inside the control namespace; its amphora runs
under host h1's agent, bridged onto h1's uplinks; members are HTTP servers on hosts h2 and
h3's member network; the client namespace reaches the VIP through the router, and h1's
agent heartbeats reach the health manager in the control namespace. Losing h1
stops the traffic, and ``down`` leaves no namespace, link or process behind.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_api import V2, LabApi
from lab_probe import bare, lab_links

from lbaas.lab.lab import Lab
from lbaas.lab.services import start_services
from lbaas.lab.state import process_running
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.haproxy]

MEMBER_PORT = 8080


@pytest.fixture
def lab_dir() -> Iterator[Path]:
    # Short: the agents' HAProxy sockets live below it, within unix sockets' 107 bytes.
    directory = Path(tempfile.mkdtemp(prefix="lab", dir="/tmp"))
    try:
        yield directory
    finally:
        subprocess.run(["rm", "-rf", str(directory)], check=False)


def serve_member(lab: Lab, host: str, root: Path, started: list[subprocess.Popen[bytes]]) -> str:
    """An HTTP server on ``host``'s member-network address that answers with the host's name."""
    address = bare(lab.status()["hosts"][host]["addresses"]["m0"])
    directory = root / f"www-{host}"
    directory.mkdir()
    (directory / "index.html").write_text(f"served by {host}\n")
    namespace = lab.names.host(int(host[1:]))
    server = [sys.executable, "-m", "http.server", str(MEMBER_PORT), "--bind", address]
    started.append(
        subprocess.Popen(
            ["ip", "netns", "exec", namespace, *server, "--directory", str(directory)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    wait_until(
        lambda: curl(namespace, f"http://{address}:{MEMBER_PORT}/") is not None,
        what=f"member on {host}",
    )
    return address


def curl(namespace: str, url: str, timeout: float = 2.0) -> str | None:
    argv = ["ip", "netns", "exec", namespace, "curl", "-sf", "-m", str(timeout), url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 30, check=False)
    return done.stdout if done.returncode == 0 else None


def lbaas_processes(directory: Path) -> list[str]:
    """Processes whose command line names the lab's directory (agents, API, HAProxy)."""
    done = subprocess.run(["pgrep", "-af", str(directory)], capture_output=True, text=True)
    return [line for line in done.stdout.splitlines() if "pgrep" not in line]


def test_a_load_balancer_across_lab_hosts_serves_the_client_until_its_host_is_lost(
    lab_dir: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    name = f"s{uuid.uuid4().hex[:7]}"
    lab = Lab(name, lab_dir)
    try:
        lab.up(hosts=3)
        services = start_services(lab)
        api = LabApi(services["api_namespace"], services["api"])
        backends = [serve_member(lab, host, lab_dir, sleepers) for host in ("h2", "h3")]

        body = {"name": "web", "vip_subnet_id": services["vip_subnet_id"]}
        lb = api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": body})["loadbalancer"]
        api.wait_active(lb["id"])
        listener = api.create(
            lb["id"],
            "listeners",
            {"loadbalancer_id": lb["id"], "protocol": "HTTP", "protocol_port": 80},
        )
        pool = api.create(
            lb["id"],
            "pools",
            {"listener_id": listener, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"},
        )
        for backend in backends:
            api.create(
                lb["id"],
                f"pools/{pool}/members",
                {
                    "address": backend,
                    "protocol_port": MEMBER_PORT,
                    "subnet_id": services["member_subnet_ids"]["m0"],
                },
            )

        # The amphora runs under h1's agent, in a namespace named after h1.
        amphorae = [ns for ns in lab_links(f"{name}-h1-amp-")]
        assert len(amphorae) == 1
        haproxy = subprocess.run(
            ["ip", "netns", "pids", amphorae[0]], capture_output=True, text=True, check=True
        ).stdout.split()
        assert haproxy

        vip = f"http://{lb['vip_address']}/"
        answers = {curl(lab.names.client, vip) for _ in range(6)}
        assert answers == {"served by h2\n", "served by h3\n"}
        # h1's agent heartbeats over the fabric to the health manager in <lab>-ctl, signed
        # with the key the lab gave both: the requests show in the listener's statistics.
        stats = f"{V2}/listeners/{listener}/stats"
        wait_until(
            lambda: api.call("GET", stats)["stats"]["total_connections"] >= 6,
            what="the client's requests in the heartbeats' statistics",
        )

        agent = lab.status()["hosts"]["h1"]["processes"]
        lab.host_down("h1")
        assert agent and not any(process_running(pid) for pid in agent)
        assert not any(process_running(int(pid)) for pid in haproxy)
        assert curl(lab.names.client, vip, timeout=1.0) is None
        # The members' hosts are still up: the VIP, not the network, went away.
        assert curl(lab.names.host(2), f"http://{backends[1]}:{MEMBER_PORT}/") is not None
    finally:
        lab.down()
    assert lab_links(f"{name}-") == []
    assert lbaas_processes(lab_dir) == []
