"""An ACTIVE_STANDBY pair across two lab hosts, and the loss of the MASTER's host.

Needs root. A two-host lab (``lbaas lab``) with its control plane and an enrolled agent
per host: a load balancer of an ACTIVE_STANDBY flavor gets its MASTER and BACKUP on the
two distinct hosts, each run by its own host's agent; the client namespace reaches the
member through the VIP, and the control host (its health manager) reaches each amphora's
own HAProxy on its VRRP address, which is what keeps a late pair amphora from being
failed over (issue 34), while the VIP's peers port stays closed. The MASTER's agent
unable to read its amphora's statistics for twice the silence window (as on a busy host,
where the read misses the round's deadline), that amphora's heartbeats stop while its
host's go on: it answers on its own address and is not rebuilt. ``restart of the MASTER's agent (SIGKILL, away for twice the silence window) rebuilds
nothing: its host answers on the agent's port. ``host-down`` of the MASTER's host (its agent, keepalived and
HAProxy SIGKILLed, its links down) leaves the VIP to the BACKUP on the other host: the
client is served again, by the other host's amphora.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from lab_api import V2, LabApi, host_list
from lab_probe import lab_links, own_address_answers
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


def by_role(api: LabApi, lb_id: str, field: str) -> dict[str, str]:
    """``field`` of each live amphora of the load balancer, by role."""
    path = f"/v2/octavia/amphorae?loadbalancer_id={lb_id}"
    live = [a for a in api.call("GET", path)["amphorae"] if a["status"] in LIVE_AMPHORA_STATUSES]
    return {str(a["role"]): str(a[field]) for a in live}


@contextmanager
def statistics_unreadable(lab_dir: Path, amphora_id: str) -> Iterator[None]:
    """Its agent cannot read the amphora's statistics (its HAProxy's master CLI and
    runtime sockets moved aside; the agent knows HAProxy runs by its pid file), so it
    sends no heartbeat of it; HAProxy serves on, its host heartbeats go on."""
    [directory] = lab_dir.glob(f"**/amphorae/{amphora_id}")
    moved = [directory / name for name in ("master.sock", "stats.sock")]
    for sock in moved:
        sock.rename(sock.with_name(f"{sock.name}.aside"))
    try:
        yield
    finally:
        for sock in moved:
            with contextlib.suppress(FileNotFoundError):  # failed over: its files are gone
                sock.with_name(f"{sock.name}.aside").rename(sock)


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
        # The health manager's evidence for each amphora: its own HAProxy, its own address.
        for role, address in by_role(api, lb_id, "vrrp_ip").items():
            assert own_address_answers(ctl, address), (role, address)

        # The member on the BACKUP's host, which stays up.
        survivor = placed[AmphoraRole.BACKUP]
        served = f"served by {survivor}\n"
        backend = serve_member(lab, survivor, lab_dir, sleepers)
        serve_through(api, lb_id, [backend], services["member_subnet_ids"]["m0"])
        vip = api.call("GET", f"{V2}/loadbalancers/{lb_id}")["loadbalancer"]["vip_address"]
        url = f"http://{vip}/"
        wait_until(lambda: curl(lab.names.client, url) == served, what="the VIP")
        assert not own_address_answers(ctl, vip)  # the peers port is open on no VIP

        # The MASTER amphora's heartbeats stop, its host's go on, its HAProxy serves: it
        # is asked on its own address and kept (before issue 34: rebuilt after 3 s).
        pair = amphora_ids(api, lb_id)
        with statistics_unreadable(lab_dir, by_role(api, lb_id, "id")[AmphoraRole.MASTER]):
            time.sleep(AWAY)
            assert curl(lab.names.client, url, timeout=1.0) == served
            assert {h["status"] for h in host_list(ctl, settings).values()} == {HostStatus.UP}
        assert amphora_ids(api, lb_id) == pair

        # The MASTER's agent away for longer than the hosts' and the amphorae's silence
        # windows (a restart, an upgrade step): its host answers on the agent's port, so
        # it is a restarting agent, not a lost host; no amphora of the pair is rebuilt.
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
