"""An ACTIVE_STANDBY pair across two lab hosts, and the loss of the MASTER's host.

Needs root. A two-host lab (``lbaas lab``) with its control plane and an enrolled agent
per host: a load balancer of an ACTIVE_STANDBY flavor gets its MASTER and BACKUP on the
two distinct hosts, each run by its own host's agent; the client namespace reaches the
member through the VIP. ``restart of the MASTER's agent (SIGKILL, away for twice the silence window) rebuilds
nothing: its host answers on the agent's port. ``host-down`` of the MASTER's host (its agent, keepalived and
HAProxy SIGKILLed, its links down) leaves the VIP to the BACKUP on the other host: the
client is served again, by the other host's amphora.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from lab_api import V2, LabApi, host_list
from lab_probe import lab_links
from test_lab_services import curl, serve_member, serve_through

from lbaas.lab.lab import Lab
from lbaas.lab.services import AGENT_PART, start_agent, start_services
from lbaas.model.enums import (
    LIVE_AMPHORA_STATUSES,
    AmphoraRole,
    HostStatus,
    ProvisioningStatus,
)
from tests.support.waiting import wait_until

#: Seconds the MASTER's agent stays away: over twice the 3 s an amphora may be silent.
AWAY = 7.0

pytestmark = [pytest.mark.root, pytest.mark.slow, pytest.mark.haproxy]


def active_standby_flavor(api: LabApi) -> str:
    data = json.dumps({"loadbalancer_topology": "ACTIVE_STANDBY"})
    body = {"name": "ha", "provider_name": "amphora", "flavor_data": data}
    profile = api.call("POST", f"{V2}/flavorprofiles", {"flavorprofile": body})
    flavor = {"name": "ha", "flavor_profile_id": profile["flavorprofile"]["id"]}
    return str(api.call("POST", f"{V2}/flavors", {"flavor": flavor})["flavor"]["id"])


def hosts_by_role(api: LabApi, lb_id: str) -> dict[str, str]:
    path = f"/v2/octavia/amphorae?loadbalancer_id={lb_id}"
    live = [a for a in api.call("GET", path)["amphorae"] if a["status"] in LIVE_AMPHORA_STATUSES]
    return {str(a["role"]): str(a["compute_id"]) for a in live}


def amphora_ids(api: LabApi, lb_id: str) -> set[str]:
    path = f"/v2/octavia/amphorae?loadbalancer_id={lb_id}"
    live = [a for a in api.call("GET", path)["amphorae"] if a["status"] in LIVE_AMPHORA_STATUSES]
    return {str(a["id"]) for a in live}


def test_a_pair_spans_two_hosts_and_survives_the_masters_host(
    lab_dir: Path, sleepers: list[subprocess.Popen[bytes]]
) -> None:
    name = f"p{uuid.uuid4().hex[:7]}"
    lab = Lab(name, lab_dir)
    try:
        lab.up(hosts=2)
        services = start_services(lab)
        api = LabApi(services["api_namespace"], services["api"])
        ctl, settings = services["api_namespace"], services["settings"]
        # A pair needs both hosts UP (heard from): with one, it would be refused.
        wait_until(
            lambda: {h["status"] for h in host_list(ctl, settings).values()} == {HostStatus.UP},
            what="the two enrolled hosts UP",
        )
        flavor = active_standby_flavor(api)
        body = {"name": "ha", "vip_subnet_id": services["vip_subnet_id"], "flavor_id": flavor}
        lb_id = str(
            api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": body})["loadbalancer"]["id"]
        )
        api.wait_active(lb_id)
        placed = hosts_by_role(api, lb_id)
        assert set(placed) == {AmphoraRole.MASTER, AmphoraRole.BACKUP}, placed
        assert sorted(placed.values()) == ["h1", "h2"], placed
        for host in ("h1", "h2"):  # each host's agent runs its own amphora namespace
            assert lab_links(f"{name}-{host}-amp-"), host

        # The member on the BACKUP's host, which stays up.
        survivor = placed[AmphoraRole.BACKUP]
        served = f"served by {survivor}\n"
        backend = serve_member(lab, survivor, lab_dir, sleepers)
        serve_through(api, lb_id, [backend], services["member_subnet_ids"]["m0"])
        vip = api.call("GET", f"{V2}/loadbalancers/{lb_id}")["loadbalancer"]["vip_address"]
        url = f"http://{vip}/"
        wait_until(lambda: curl(lab.names.client, url) == served, what="the VIP")

        # The MASTER's agent away for longer than the hosts' and the amphorae's silence
        # windows (a restart, an upgrade step): its host answers on the agent's port, so
        # it is a restarting agent, not a lost host; no amphora of the pair is rebuilt.
        pair = amphora_ids(api, lb_id)
        lost = placed[AmphoraRole.MASTER]
        lab.kill_registered(lost, AGENT_PART)
        time.sleep(AWAY)
        assert curl(lab.names.client, url, timeout=1.0) == served
        start_agent(lab, lost)
        wait_until(
            lambda: {h["status"] for h in host_list(ctl, settings).values()} == {HostStatus.UP},
            what=f"{lost} heard again",
        )
        assert amphora_ids(api, lb_id) == pair
        assert (
            api.call("GET", f"{V2}/loadbalancers/{lb_id}")["loadbalancer"]["provisioning_status"]
            == ProvisioningStatus.ACTIVE
        )

        lab.host_down(lost)
        wait_until(
            lambda: curl(lab.names.client, url, timeout=1.0) == served,
            timeout=30,
            what=f"the VIP served by the BACKUP after {lost} was lost",
        )
    finally:
        lab.down()
    assert lab_links(f"{name}-") == []
