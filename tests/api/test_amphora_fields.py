"""Every field of the amphora object for SINGLE and ACTIVE_STANDBY, as an operator sees it.

The amphorae are written by the provider's own repository functions (the noop provider
creates none) on enrolled fleet hosts, and the hosts' heartbeats are applied by the
health manager's registry, as in a deployment: the certificate expiry and the VRRP state
each agent announces show on its amphorae, and after a takeover the list names the
amphora that holds the VIP.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from lbaas.db.amphorae import amphora_repo
from lbaas.db.hosts import host_repo
from lbaas.health.fleet import SqlHostRegistry
from lbaas.model.fleet import HostAddress, HostAnnouncement
from tests.support.api_client import Api

AMPHORAE = "/v2/octavia/amphorae"
NOW = datetime(2026, 11, 26, 1, 0, 0)
EXPIRY = datetime(2027, 11, 26, 1, 2, 3, tzinfo=UTC).timestamp()


def enrol(plane: Any, host_id: str, zone: str) -> None:
    with plane.database.write() as session:
        where = HostAddress(host_id, f"127.0.30.{host_id[-1]}", 9443)
        host_repo.enrol(session, where, zone=zone, capacity=10, now=NOW, up_at=1.0)


class Heartbeats:
    """Host heartbeats through the health manager's registry, each newer than the last."""

    def __init__(self, plane: Any, zones: dict[str, str]) -> None:
        self._registry = SqlHostRegistry(plane.database)
        self._zones = zones
        self._sequence = 0

    def send(self, host_id: str, amphorae: tuple[str, ...], vrrp: dict[str, str]) -> None:
        self._sequence += 1
        seen = HostAnnouncement(
            host_id,
            f"127.0.30.{host_id[-1]}",
            9443,
            self._zones[host_id],
            10,
            amphorae,
            vrrp=tuple(vrrp.items()),
            cert_expiration=EXPIRY,
        )
        assert self._registry.record(seen, 1, self._sequence, 1000.0 + self._sequence)


def pair(plane: Any, lb: dict[str, Any]) -> tuple[str, str]:
    """The two amphorae of an ACTIVE_STANDBY load balancer, as the pair converger writes."""
    ids = []
    for host_id, role, priority, port, address in (
        ("host-1", "MASTER", 200, "p-vrrp-1", "127.0.10.41"),
        ("host-2", "BACKUP", 100, "p-vrrp-2", "127.0.10.42"),
    ):
        with plane.database.write() as session:
            amp = amphora_repo.create_pair_member(
                session,
                lb["id"],
                f"127.0.30.{host_id[-1]}",
                lb["vip_address"],
                lb["vip_port_id"],
                role,
                (77, priority),
                NOW,
                compute_id=host_id,
            )
            amphora_repo.set_vrrp_port(session, amp.id, port, address)
            amphora_repo.set_vrrp_interface(session, amp.id, "vip0")
            amphora_repo.mark_serving(session, amp.id, NOW)
            ids.append(amp.id)
    return ids[0], ids[1]


def shown(admin: Api, amphora_id: str) -> dict[str, Any]:
    r = admin.get(f"{AMPHORAE}/{amphora_id}")
    assert r.status_code == 200, r.text
    amp: dict[str, Any] = r.json()["amphora"]
    return amp


def roles(admin: Api, lb_id: str) -> dict[str, str]:
    r = admin.get(AMPHORAE, params={"loadbalancer_id": lb_id})
    assert r.status_code == 200, r.text
    return {a["id"]: a["role"] for a in r.json()["amphorae"]}


def test_active_standby_amphorae_show_every_field(api: Api, admin: Api, plane: Any) -> None:
    lb = api.create_lb()
    zones = {"host-1": "az-1", "host-2": "az-2"}
    for host_id, zone in zones.items():
        enrol(plane, host_id, zone)
    master, backup = pair(plane, lb)
    beats = Heartbeats(plane, zones)
    beats.send("host-1", (master,), {master: "MASTER"})
    beats.send("host-2", (backup,), {backup: "BACKUP"})
    one, two = shown(admin, master), shown(admin, backup)
    for amp, host, zone, role, priority, address, port in (
        (one, "host-1", "az-1", "MASTER", 200, "127.0.10.41", "p-vrrp-1"),
        (two, "host-2", "az-2", "BACKUP", 100, "127.0.10.42", "p-vrrp-2"),
    ):
        assert amp["loadbalancer_id"] == lb["id"] and amp["status"] == "ALLOCATED"
        assert (amp["role"], amp["vrrp_priority"], amp["vrrp_id"]) == (role, priority, 77)
        assert (amp["compute_id"], amp["cached_zone"]) == (host, zone)
        assert amp["lb_network_ip"] == f"127.0.30.{host[-1]}"
        assert (amp["vrrp_ip"], amp["vrrp_port_id"], amp["vrrp_interface"]) == (
            address,
            port,
            "vip0",
        )
        assert (amp["ha_ip"], amp["ha_port_id"]) == (lb["vip_address"], lb["vip_port_id"])
        assert amp["cert_expiration"] == "2027-11-26T01:02:03"
        assert amp["image_id"] is None and amp["compute_flavor"] is None
        assert amp["cert_busy"] is False


def test_roles_follow_the_amphora_that_holds_the_vip(api: Api, admin: Api, plane: Any) -> None:
    lb = api.create_lb()
    zones = {"host-1": "az-1", "host-2": "az-1"}
    for host_id, zone in zones.items():
        enrol(plane, host_id, zone)
    master, backup = pair(plane, lb)
    beats = Heartbeats(plane, zones)
    # Before their first election both keepalived report BACKUP: the built roles stay.
    beats.send("host-1", (master,), {master: "BACKUP"})
    beats.send("host-2", (backup,), {backup: "BACKUP"})
    assert roles(admin, lb["id"]) == {master: "MASTER", backup: "BACKUP"}
    # The MASTER's keepalived died: its peer took the VIP; host-1 says nothing of it yet.
    beats.send("host-2", (backup,), {backup: "MASTER"})
    assert roles(admin, lb["id"]) == {master: "BACKUP", backup: "MASTER"}
    assert admin.get(AMPHORAE, params={"role": "MASTER"}).json()["amphorae"][0]["id"] == backup
    # Its keepalived restarted as BACKUP (nopreempt): the roles stay as they are.
    beats.send("host-1", (master,), {master: "BACKUP"})
    assert roles(admin, lb["id"]) == {master: "BACKUP", backup: "MASTER"}
    # A FAULT (its HAProxy check failing) holds no VIP: shown BACKUP, the other MASTER.
    beats.send("host-2", (backup,), {backup: "FAULT"})
    beats.send("host-1", (master,), {master: "MASTER"})
    assert roles(admin, lb["id"]) == {master: "MASTER", backup: "BACKUP"}
    # The configured priorities are what keepalived runs with: a takeover changes none.
    assert (shown(admin, master)["vrrp_priority"], shown(admin, backup)["vrrp_priority"]) == (
        200,
        100,
    )


def test_single_amphora_shows_its_host_and_never_a_vrrp_role(
    api: Api, admin: Api, plane: Any
) -> None:
    lb = api.create_lb()
    enrol(plane, "host-3", "az-3")
    with plane.database.write() as session:
        amp = amphora_repo.create_amphora(
            session, lb["id"], "127.0.30.3", lb["vip_address"], NOW, compute_id="host-3"
        )
        amphora_repo.mark_serving(session, amp.id, NOW)
        amp_id = amp.id
    Heartbeats(plane, {"host-3": "az-3"}).send(
        "host-3", (amp_id,), {amp_id: "MASTER"}
    )  # a stray state
    view = shown(admin, amp_id)
    assert view["role"] == "STANDALONE"
    assert (view["compute_id"], view["cached_zone"], view["lb_network_ip"]) == (
        "host-3",
        "az-3",
        "127.0.30.3",
    )
    # Octavia 19 records the VIP's address and port on every amphora, SINGLE included
    # (``UpdateAmphoraVIPData`` in ``_get_amp_net_subflow`` of both topologies' flows).
    assert (view["ha_ip"], view["ha_port_id"]) == (lb["vip_address"], lb["vip_port_id"])
    assert view["cert_expiration"] == "2027-11-26T01:02:03"
    # Its vrrp_ip/vrrp_port_id are the amphora's own port on the VIP network, which a
    # SINGLE amphora here has not (the VIP is its only address there), and it runs no
    # VRRP: those stay null (Octavia shows vrrp_id 1; docs/api-compat.md).
    for absent in ("vrrp_ip", "vrrp_port_id", "vrrp_interface", "vrrp_id", "vrrp_priority"):
        assert view[absent] is None, absent
    assert view["image_id"] is None and view["compute_flavor"] is None
