"""Netns mode through the whole product: ``lbaas serve`` with ``agent.mode = "netns"``.

Needs root. The service runs with two subnets of its own in private ranges the test picks
(declared through ``LBAAS_NETWORK__SUBNETS``): a VIP subnet whose gateway address the host
gets on the VIP network's bridge, and a member subnet. Through the Octavia API the test
builds a load balancer on the VIP subnet, an HTTP listener, a ROUND_ROBIN pool, two members
on the member subnet (``subnet_id`` given, which is what gives the amphora a leg on that
network) and an HTTP health monitor. The agent creates the amphora's namespace, the bridges
and the veths; the test plugs namespaces of its own into those bridges: two backends (tiny
HTTP servers answering their name) on the member network and a client on the VIP network.
Traffic must reach both backends from the host and from the client namespace. Finally the
load balancer is cascade-deleted and nothing of its amphora may be left: no namespace, no
veth, no bridge, no HAProxy.

Traffic goes only to 127.0.0.0/8 (the API) and to addresses of the test's own subnets,
which exist only inside namespaces this test (or the service it started) created.
Everything is removed even when the test fails: the fixture kills the backends, deletes the
test's namespaces, stops the service (which deletes every load balancer and kills any
HAProxy of its state directory), then deletes whatever namespace, link or bridge of the
test's networks and amphorae is still there.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import http.client
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lbaas.amphora.plumbing import AmphoraPlumbing, bridge_name, namespace_name, plan_plumbing
from lbaas.host.base import CommandResult, HostCommandFailed
from lbaas.host.real import RealHostOps
from lbaas.wire.amphora import (
    SPEC_FORMAT,
    AmphoraSpec,
    HaproxyFacts,
    MemberNetwork,
    NetworkSpec,
    VipSpec,
)
from tests.e2e.amphora.octavia_api import OctaviaApi
from tests.e2e.amphora.serve_process import (
    ServeInstance,
    haproxy_pids_under,
    process_alive,
    running_serve,
)
from tests.support import udp_echo
from tests.support.scratch_subnets import pick_subnets
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]

LISTENER_PORT = 8080
BACKEND_PORT = 8000
TRAFFIC_TIMEOUT = 90.0
STATUS_TIMEOUT = 90.0
BACKENDS = ("b1", "b2")
UDP_PORT, UDP_ECHO = 5300, 7000
MEMBER_MTU = 1450

# Run inside the client namespace: a few GETs on new connections, the bodies as JSON.
FETCH = """
import json, sys, urllib.request
seen = []
for _ in range(int(sys.argv[2])):
    try:
        seen.append(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())
    except OSError as exc:
        seen.append("!" + type(exc).__name__)
print(json.dumps(seen))
"""


@dataclass(frozen=True)
class ScratchSubnet:
    """A subnet the test declares to the service; it exists only on the test's bridges."""

    id: str
    network_id: str
    network: ipaddress.IPv4Network
    gateway: str | None

    def address(self, host: int) -> str:
        return str(self.network.network_address + host)

    def cidr_of(self, host: int) -> str:
        return f"{self.address(host)}/{self.network.prefixlen}"

    def declaration(self, name: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "network_id": self.network_id,
            "cidr": str(self.network),
            "name": name,
            "gateway_ip": self.gateway,
            "mtu": MEMBER_MTU if self.gateway is None else None,  # the member subnet's
        }


@dataclass
class Scratch:
    """What the test creates on the host, or makes the service create, to remove it all."""

    host: RealHostOps
    vip_subnet: ScratchSubnet
    member_subnet: ScratchSubnet
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:5])
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    amphora_ids: set[str] = field(default_factory=set)

    def plug(self, role: str, bridge: str, address: str) -> str:
        """A namespace of the test with one veth into ``bridge``, ``address`` on its end."""
        namespace = f"lbt-{self.tag}-{role}"
        outer, inner = f"lbt{self.tag}{role}h", f"lbt{self.tag}{role}n"
        self.namespaces.append(namespace)
        self.links.append(outer)
        self.host.create_namespace(namespace)
        self.host.create_veth_pair(outer, inner)
        self.host.move_to_namespace(inner, namespace)
        self.host.attach_to_bridge(outer, bridge)
        self.host.set_link_up(outer)
        self.host.set_link_up(inner, namespace)
        self.host.add_address(inner, address, namespace)
        return namespace

    def serve_name(self, namespace: str, address: str, name: str, root: Path) -> None:
        """An HTTP server in ``namespace`` on ``address`` answering ``name`` to GET /."""
        docroot = root / name
        docroot.mkdir(parents=True)
        (docroot / "index.html").write_text(name)
        argv = ["ip", "netns", "exec", namespace, sys.executable, "-m", "http.server"]
        argv += [str(BACKEND_PORT), "--bind", address, "--directory", str(docroot)]
        self.processes.append(
            subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )

    def remove_own(self) -> None:
        """Kill the test's servers and delete the test's namespaces (their veths go too)."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(10)
        self.processes.clear()
        for namespace in self.namespaces:
            _quietly(self.host.delete_namespace, namespace)
        for link in self.links:  # only left if plugging failed before the move
            _quietly(self.host.delete_link, link)
        self.namespaces.clear()
        self.links.clear()

    def plumbing_of(self, amphora_id: str) -> AmphoraPlumbing:
        """The namespace and legs the agent builds for ``amphora_id`` on the test's networks."""
        vip, members = self.vip_subnet, self.member_subnet
        spec = AmphoraSpec(
            version=0,
            loadbalancer_id="sweep",
            spec_format=SPEC_FORMAT,
            haproxy_config="sweep",
            haproxy_facts=HaproxyFacts(runtime_socket="sweep", fixed_digest="sweep"),
            vip=VipSpec(
                address=vip.address(2), subnet_cidr=str(vip.network), network_id=vip.network_id
            ),
            network=NetworkSpec(
                member_networks=(
                    MemberNetwork(
                        network_id=members.network_id,
                        subnet_cidr=str(members.network),
                        address=members.address(1),
                    ),
                )
            ),
        )
        return plan_plumbing(amphora_id, spec)

    def sweep(self) -> None:
        """Delete any namespace, veth or bridge of the test's amphorae and networks left."""
        self.remove_own()
        for amphora_id in sorted(self.amphora_ids):
            plumbing = self.plumbing_of(amphora_id)
            _quietly(self.host.delete_namespace, plumbing.namespace)
            for leg in plumbing.legs:
                _quietly(self.host.delete_link, leg.host_end)
        for subnet in (self.vip_subnet, self.member_subnet):
            _quietly(self.host.delete_link, bridge_name(subnet.network_id))


def _quietly(remove: Callable[[str], None], name: str) -> None:
    """One clean-up step; a failure is reported and does not stop the others."""
    try:
        remove(name)
    except HostCommandFailed as exc:
        print(f"cleanup: could not remove {name}: {exc}", file=sys.stderr)


@dataclass
class NetnsWorld:
    serve: ServeInstance
    api: OctaviaApi
    scratch: Scratch
    vip_subnet: ScratchSubnet
    member_subnet: ScratchSubnet


@pytest.fixture
def world() -> Iterator[NetnsWorld]:
    """``lbaas serve`` in netns mode with the test's two subnets; everything removed after."""
    if os.geteuid() != 0:
        pytest.skip("netns mode needs root")
    if shutil.which("haproxy") is None or shutil.which("ip") is None:
        pytest.skip("netns mode needs haproxy and iproute2")
    vip_net, member_net = pick_subnets(2)
    vip_subnet = ScratchSubnet(str(uuid.uuid4()), str(uuid.uuid4()), vip_net, str(vip_net[1]))
    member_subnet = ScratchSubnet(str(uuid.uuid4()), str(uuid.uuid4()), member_net, None)
    scratch = Scratch(RealHostOps(), vip_subnet, member_subnet)
    settings = {
        "agent": {"mode": "netns"},
        "network": {
            "subnets": [
                vip_subnet.declaration(f"vip-{scratch.tag}"),
                member_subnet.declaration(f"members-{scratch.tag}"),
            ]
        },
        # Nothing here is meant to fail over: a busy machine must not make it.
        "health": {"stale_after": 15.0},
    }
    try:
        with running_serve(settings, prefix="lbn-") as instance, instance.api() as api:
            try:
                yield NetnsWorld(instance, api, scratch, vip_subnet, member_subnet)
            finally:
                scratch.amphora_ids.update(path.name for path in instance.amphora_dirs())
                # First the test's own namespaces, so that the bridges fall out of use and
                # the service's delete (when it stops) removes them as well.
                scratch.remove_own()
    finally:
        scratch.sweep()


def _require_ours(address: str, world: NetnsWorld) -> None:
    ip = ipaddress.ip_address(address)
    if ip not in world.vip_subnet.network and ip not in world.member_subnet.network:
        raise AssertionError(f"this test sends traffic only to its own subnets, not {address}")


def get_from_host(world: NetnsWorld, address: str, port: int) -> str | None:
    """The body of GET / from the host's namespace, or None if it did not answer 200."""
    _require_ours(address, world)
    conn = http.client.HTTPConnection(address, port, timeout=5)
    try:
        conn.request("GET", "/")
        response = conn.getresponse()
        body = response.read().decode(errors="replace")
        return body if response.status == 200 else None
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def get_from_namespace(world: NetnsWorld, namespace: str, address: str, port: int) -> list[str]:
    """Bodies of a few GETs sent from inside ``namespace`` (failures as ``!<error>``)."""
    _require_ours(address, world)
    result = world.scratch.host.run_in_namespace(
        namespace, [sys.executable, "-c", FETCH, f"http://{address}:{port}/", "4"], timeout=60
    )
    if result.returncode != 0:
        return [f"!exit {result.returncode}"]
    answers: list[str] = json.loads(result.stdout)
    return answers


def namespace_addresses(namespace: str) -> set[str]:
    out = subprocess.run(
        ["ip", "-n", namespace, "-j", "-4", "addr"], capture_output=True, text=True, check=True
    ).stdout
    return {
        str(info["local"]) for link in json.loads(out or "[]") for info in link.get("addr_info", [])
    }


def link_addresses(link: str) -> set[str]:
    out = subprocess.run(
        ["ip", "-j", "-4", "addr", "show", "dev", link], capture_output=True, text=True, check=True
    ).stdout
    return {
        str(info["local"])
        for entry in json.loads(out or "[]")
        for info in entry.get("addr_info", [])
    }


def link_mtu(link: str, namespace: str) -> int:
    out = subprocess.run(
        ["ip", "-n", namespace, "-j", "link", "show", "dev", link],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(json.loads(out)[0]["mtu"])


def namespace_pids(namespace: str) -> list[int]:
    out = subprocess.run(
        ["ip", "netns", "pids", namespace], capture_output=True, text=True, check=True
    ).stdout
    return [int(pid) for pid in out.split()]


def _start_echo(world: NetnsWorld, name: str, address: str) -> subprocess.Popen[bytes]:
    namespace = f"lbt-{world.scratch.tag}-{name}"
    argv = ["ip", "netns", "exec", namespace, *udp_echo.echo_argv(name, address, UDP_ECHO)]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    world.scratch.processes.append(process)
    return process


@dataclass
class _UdpPool:
    """The UDP pool under test: its members, their echo processes, the client's side."""

    world: NetnsWorld
    lb_id: str
    pool_id: str
    members: dict[str, str]  # backend name -> member id
    backends: dict[str, str]  # backend name -> address
    echoes: dict[str, subprocess.Popen[bytes]]
    run: Callable[[Sequence[str]], CommandResult]  # a command in the client's namespace
    client: str
    vip: str

    def ask(self, count: int, first_source_port: int | None = None) -> collections.Counter[str]:
        """Which backend answered each of ``count`` new flows to the VIP."""
        return udp_echo.ask(self.run, self.client, self.vip, UDP_PORT, count, first_source_port)

    def statuses_are(self, wanted: dict[str, str]) -> Callable[[], bool]:
        def check() -> bool:
            api = self.world.api
            return all(
                api.member(self.pool_id, self.members[name])["operating_status"] == status
                for name, status in wanted.items()
            )

        return check

    def stop(self, name: str) -> None:
        self.echoes[name].terminate()
        self.echoes[name].wait(10)


def _udp_listener_beside_it(
    world: NetnsWorld, lb_id: str, vip: str, backends: dict[str, str], client: str
) -> None:
    """A UDP listener on the same VIP: balanced by the L4 engine in the amphora's namespace.

    Its members answer UDP on the backends' addresses and show NO_MONITOR while the pool has
    no monitor; the listener's flows reach its ``/stats``. Then a UDP-CONNECT monitor is
    added, run by the agent from inside the amphora's namespace: the members go ONLINE, a
    member whose echo stops gets no new flows and shows ERROR, and once it answers again
    it is back ONLINE and getting flows. Last, one member becomes a backup.
    """
    api, scratch = world.api, world.scratch
    echoes = {name: _start_echo(world, name, address) for name, address in backends.items()}
    listener = api.create_listener(lb_id, "UDP", UDP_PORT)
    pool_id = api.create_pool(lb_id, "UDP", "ROUND_ROBIN", listener_id=listener["id"])["id"]
    members = {
        name: api.create_member(
            lb_id, pool_id, address, UDP_ECHO, subnet_id=world.member_subnet.id
        )["id"]
        for name, address in backends.items()
    }
    client_ns = f"lbt-{scratch.tag}-cl"

    def run(argv: Sequence[str]) -> CommandResult:
        return scratch.host.run_in_namespace(client_ns, argv, timeout=60)

    pool = _UdpPool(world, lb_id, pool_id, members, backends, echoes, run, client, vip)
    # Source ports 9000-9029: the kernel's own choice could give two of the 30 flows one
    # 5-tuple (the second then rides the first's conntrack entry and is not a new flow, so
    # /stats would rightly count 29); 9000-9999 is used by no other flow of this test.
    answered = pool.ask(30, first_source_port=9000)
    assert answered["timeout"] == 0 and set(answered) == set(backends), answered
    wait_until(
        pool.statuses_are({name: "NO_MONITOR" for name in backends}),
        STATUS_TIMEOUT,
        "the UDP members NO_MONITOR",
    )

    def counted() -> bool:
        return api.listener_stats(listener["id"])["total_connections"] >= 30

    wait_until(counted, STATUS_TIMEOUT, "the UDP listener's 30 flows in its /stats")
    wait_until(
        lambda: api.status_tree(lb_id)["loadbalancer"]["operating_status"] == "ONLINE",
        STATUS_TIMEOUT,
        "the load balancer ONLINE with its UDP listener",
    )
    _udp_members_checked(pool)
    _udp_backup_takes_over(pool)


def _udp_members_checked(pool: _UdpPool) -> None:
    """A UDP-CONNECT monitor on the UDP pool: one member stopped and started again."""
    # UDP-CONNECT fails on the ICMP port-unreachable of a stopped echo; Octavia's minimum
    # delay for it is 3 s.
    pool.world.api.create_healthmonitor(
        pool.lb_id, pool.pool_id, type="UDP-CONNECT", delay=3, timeout=2, max_retries=1,
        max_retries_down=1,
    )  # fmt: skip
    stopped, kept = sorted(pool.backends)
    wait_until(
        pool.statuses_are({name: "ONLINE" for name in pool.backends}),
        STATUS_TIMEOUT,
        "the monitored UDP members ONLINE",
    )
    pool.stop(stopped)
    wait_until(
        pool.statuses_are({stopped: "ERROR", kept: "ONLINE"}),
        STATUS_TIMEOUT,
        f"UDP member {stopped} ERROR once its echo stopped",
    )
    # Out of the table: every new flow goes to the member left (none times out). Source
    # ports below the kernel's ephemeral range: no earlier flow's conntrack entry (which
    # keeps a flow on its member) can match these flows.
    answered = pool.ask(20, first_source_port=20000)
    assert answered == {kept: 20}, answered

    pool.echoes[stopped] = _start_echo(pool.world, stopped, pool.backends[stopped])
    wait_until(
        pool.statuses_are({name: "ONLINE" for name in pool.backends}),
        STATUS_TIMEOUT,
        f"UDP member {stopped} ONLINE again",
    )
    seen: collections.Counter[str] = collections.Counter()
    rounds = iter(range(21000, 32700, 20))

    def both_answer() -> bool:
        seen.update(pool.ask(20, next(rounds)))
        return set(pool.backends) <= set(seen)

    wait_until(both_answer, TRAFFIC_TIMEOUT, f"new UDP flows reaching {stopped} again")
    assert set(seen) == set(pool.backends), seen  # and no flow timed out


def _udp_backup_takes_over(pool: _UdpPool) -> None:
    """One member made a backup: it gets no new flow while the primary is healthy, and
    every new flow once the monitor finds the primary down (Octavia's backup member)."""
    primary, backup = sorted(pool.backends)
    pool.world.api.update_member(pool.lb_id, pool.pool_id, pool.members[backup], backup=True)
    # Source ports 10000-19999: used by no earlier flow of this test (conntrack would
    # keep such a flow on its old member).
    ports = iter(range(10000, 20000, 20))
    answered = pool.ask(20, next(ports))
    assert answered == {primary: 20}, answered
    pool.stop(primary)
    wait_until(
        pool.statuses_are({primary: "ERROR", backup: "ONLINE"}),
        STATUS_TIMEOUT,
        f"UDP member {primary} ERROR, the backup ONLINE",
    )
    answered = pool.ask(20, next(ports))
    assert answered == {backup: 20}, answered


def test_netns_load_balancer_through_serve_and_clean_delete(
    world: NetnsWorld, tmp_path: Path
) -> None:
    api, scratch, host = world.api, world.scratch, world.scratch.host
    vip_subnet, member_subnet = world.vip_subnet, world.member_subnet

    lb = api.create_loadbalancer(vip_subnet.id, name=f"netns-{scratch.tag}")
    lb_id, vip = lb["id"], lb["vip_address"]
    assert ipaddress.ip_address(vip) in vip_subnet.network and vip != vip_subnet.gateway
    amphorae = api.amphorae(lb_id)
    assert len(amphorae) == 1, amphorae
    amphora_id = amphorae[0]["id"]
    scratch.amphora_ids.add(amphora_id)
    amphora_ns = namespace_name(amphora_id)
    vip_bridge = bridge_name(vip_subnet.network_id)
    member_bridge = bridge_name(member_subnet.network_id)
    assert host.namespace_exists(amphora_ns)
    assert vip in namespace_addresses(amphora_ns)
    # The host reaches the VIP through the VIP subnet's gateway address on the bridge.
    assert vip_subnet.gateway in link_addresses(vip_bridge)

    listener = api.create_listener(lb_id, "HTTP", LISTENER_PORT)
    pool = api.create_pool(lb_id, "HTTP", "ROUND_ROBIN", listener_id=listener["id"])
    backend_addresses = {name: member_subnet.address(200 + i) for i, name in enumerate(BACKENDS)}
    members = {
        name: api.create_member(
            lb_id,
            pool["id"],
            address,
            BACKEND_PORT,
            name=name,
            subnet_id=member_subnet.id,
        )
        for name, address in backend_addresses.items()
    }
    # The members' subnet gave the amphora a leg (and an address) on the member network.
    assert host.link_exists(member_bridge)
    leg_addresses = namespace_addresses(amphora_ns) - {vip, "127.0.0.1"}
    assert any(ipaddress.ip_address(a) in member_subnet.network for a in leg_addresses), (
        leg_addresses
    )
    # The member network's declared MTU reached the amphora's leg on it.
    member_leg = next(
        leg
        for leg in scratch.plumbing_of(amphora_id).legs
        if leg.network_id == member_subnet.network_id
    )
    assert link_mtu(member_leg.amphora_end, amphora_ns) == MEMBER_MTU

    for name, address in backend_addresses.items():
        namespace = scratch.plug(
            name, member_bridge, member_subnet.cidr_of(200 + BACKENDS.index(name))
        )
        scratch.serve_name(namespace, address, f"backend-{name}", tmp_path)
    client_ns = scratch.plug("cl", vip_bridge, vip_subnet.cidr_of(250))

    api.create_healthmonitor(
        lb_id,
        pool["id"],
        type="HTTP",
        delay=1,
        timeout=1,
        max_retries=1,
        max_retries_down=1,
        url_path="/",
        expected_codes="200",
    )

    def online(member_id: str) -> bool:
        status: str = api.member(pool["id"], member_id)["operating_status"]
        return status == "ONLINE"

    for name, member in members.items():
        wait_until(
            functools.partial(online, member["id"]),
            STATUS_TIMEOUT,
            f"member {name} ONLINE",
        )

    wanted = {f"backend-{name}" for name in BACKENDS}
    from_host: set[str] = set()

    def host_saw_both() -> bool:
        body = get_from_host(world, vip, LISTENER_PORT)
        if body is not None:
            from_host.add(body)
        return wanted <= from_host

    wait_until(host_saw_both, TRAFFIC_TIMEOUT, "both backends from the host")
    assert from_host == wanted

    from_client: set[str] = set()

    def client_saw_both() -> bool:
        from_client.update(a for a in get_from_namespace(world, client_ns, vip, LISTENER_PORT))
        return wanted <= from_client

    wait_until(client_saw_both, TRAFFIC_TIMEOUT, "both backends from the client namespace")
    assert {a for a in from_client if not a.startswith("!")} == wanted

    _udp_listener_beside_it(world, lb_id, vip, backend_addresses, vip_subnet.address(250))

    # Cascade delete: nothing of the amphora may be left.
    plumbing = scratch.plumbing_of(amphora_id)
    assert {leg.bridge for leg in plumbing.legs} == {vip_bridge, member_bridge}
    for leg in plumbing.legs:
        assert host.link_exists(leg.host_end), leg
    haproxies = namespace_pids(amphora_ns)
    assert haproxies, "no process runs in the amphora's namespace"
    # Every HAProxy of the service is this amphora's, running inside its namespace.
    assert set(haproxy_pids_under(world.serve.state_dir)) == set(haproxies)
    scratch.remove_own()  # the bridges are the amphora's alone again
    api.delete_loadbalancer(lb_id, timeout=STATUS_TIMEOUT)

    wait_until(
        lambda: not host.namespace_exists(amphora_ns), STATUS_TIMEOUT, "amphora namespace gone"
    )
    for leg in plumbing.legs:
        assert not host.link_exists(leg.host_end), f"veth {leg.host_end} left"
        assert not host.link_exists(leg.bridge), f"bridge {leg.bridge} left"
    wait_until(
        lambda: not any(process_alive(pid) for pid in haproxies),
        STATUS_TIMEOUT,
        f"processes of the amphora {haproxies} to exit",
    )
    assert haproxy_pids_under(world.serve.state_dir) == []
    assert not (world.serve.state_dir / "amphorae" / amphora_id).exists()
    assert all(a["status"] == "DELETED" for a in api.amphorae(lb_id))
