"""lbaas across the lab's hosts for real: control plane in ``<lab>-ctl``, a fleet of agents.

Every host's agent is enrolled and heartbeats to the health manager in the control
namespace, so ``lbaas host list`` shows them UP. Load balancers created through the API
inside the control namespace spread over the three hosts; one of them, with members on
every host's member network, is reached from the client namespace through the router.
Losing the host its amphora runs on (``host-down``) kills that amphora, and the load
balancer serves again from an amphora rebuilt on another host. ``down`` leaves no
namespace, link or process behind.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from lab_api import V2, LabApi, host_list
from lab_probe import bare, lab_links

from lbaas.lab.lab import Lab
from lbaas.lab.services import start_services
from lbaas.lab.state import process_running
from lbaas.model.enums import HostStatus
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.haproxy]

MEMBER_PORT = 8080


def serve_member(
    lab: Lab,
    host: str,
    root: Path,
    started: list[subprocess.Popen[bytes]],
    address: str | None = None,
) -> str:
    """An HTTP server on ``host``'s member-network address (or ``address``, which the host
    must hold) that answers with the host's name."""
    address = address or bare(lab.status()["hosts"][host]["addresses"]["m0"])
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


HOSTS = ("h1", "h2", "h3")
#: Load balancers made besides the served one, so that placement has something to spread.
OTHERS = 3


def create_lb(api: LabApi, name: str, subnet: str) -> str:
    body = {"name": name, "vip_subnet_id": subnet}
    return str(
        api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": body})["loadbalancer"]["id"]
    )


def serve_through(api: LabApi, lb_id: str, backends: list[str], subnet: str) -> str:
    """An HTTP listener on port 80 with a round-robin pool of ``backends``; the listener."""
    listener = api.create(
        lb_id, "listeners", {"loadbalancer_id": lb_id, "protocol": "HTTP", "protocol_port": 80}
    )
    pool = api.create(
        lb_id,
        "pools",
        {"listener_id": listener, "protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN"},
    )
    for backend in backends:
        member = {"address": backend, "protocol_port": MEMBER_PORT, "subnet_id": subnet}
        api.create(lb_id, f"pools/{pool}/members", member)
    return listener


def test_the_lab_is_a_fleet_that_spreads_load_balancers_and_survives_a_lost_host(
    lab_dir: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    name = f"s{uuid.uuid4().hex[:7]}"
    lab = Lab(name, lab_dir)
    try:
        lab.up(hosts=3)
        services = start_services(lab)
        api = LabApi(services["api_namespace"], services["api"])
        ctl = services["api_namespace"]
        # Every host's agent was enrolled and heartbeats to the control plane.
        wait_until(
            lambda: (
                {h["status"] for h in host_list(ctl, services["settings"]).values()}
                == {HostStatus.UP}
            ),
            what="the three enrolled hosts UP",
        )
        assert sorted(host_list(ctl, services["settings"])) == list(HOSTS)

        web = create_lb(api, "web", services["vip_subnet_id"])
        others = [create_lb(api, f"lb{i}", services["vip_subnet_id"]) for i in range(OTHERS)]
        for lb_id in [web, *others]:
            api.wait_active(lb_id)
        placed = {lb_id: api.hosts_of(lb_id) for lb_id in [web, *others]}
        assert all(len(hosts) == 1 for hosts in placed.values()), placed
        per_host = {h: sum(hosts == [h] for hosts in placed.values()) for h in HOSTS}
        assert max(per_host.values()) - min(per_host.values()) <= 1, per_host
        listed = host_list(ctl, services["settings"])
        assert {h: listed[h]["amphorae"] for h in HOSTS} == per_host

        backends = [serve_member(lab, host, lab_dir, sleepers) for host in HOSTS]
        member_subnet = services["member_subnet_ids"]["m0"]
        listener = serve_through(api, web, backends, member_subnet)
        [lost] = placed[web]
        # Its amphora runs under its host's agent, in a namespace named after that host
        # (as do the amphorae of the other load balancers placed there).
        haproxy = [
            pid
            for namespace in lab_links(f"{name}-{lost}-amp-")
            for pid in subprocess.run(
                ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=True
            ).stdout.split()
        ]
        assert haproxy

        vip = (
            f"http://{api.call('GET', f'{V2}/loadbalancers/{web}')['loadbalancer']['vip_address']}/"
        )
        answers = {curl(lab.names.client, vip) for _ in range(6)}
        assert answers == {f"served by {h}\n" for h in HOSTS}
        # The agent heartbeats over the fabric to the health manager in <lab>-ctl, signed
        # with the key of its enrolment bundle: the requests show in the statistics.
        stats = f"{V2}/listeners/{listener}/stats"
        wait_until(
            lambda: api.call("GET", stats)["stats"]["total_connections"] >= 6,
            what="the client's requests in the heartbeats' statistics",
        )

        agent = lab.status()["hosts"][lost]["processes"]
        lab.host_down(lost)
        assert agent and not any(process_running(pid) for pid in agent)
        assert not any(process_running(int(pid)) for pid in haproxy)
        # Its amphora falls silent and is rebuilt on another host, with the same VIP.
        survivors = {f"served by {h}\n" for h in HOSTS if h != lost}
        wait_until(
            lambda: curl(lab.names.client, vip, timeout=1.0) in survivors,
            timeout=90,
            what=f"the VIP served again after {lost} was lost",
        )
        # The new amphora serves before the lost one is retired (make before break).
        wait_until(lambda: len(api.hosts_of(web)) == 1, what="the lost amphora retired")
        moved = api.hosts_of(web)
        assert len(moved) == 1 and moved[0] != lost, moved
        assert lab_links(f"{name}-{moved[0]}-amp-")
    finally:
        lab.down()
    assert lab_links(f"{name}-") == []
    assert lbaas_processes(lab_dir) == []
