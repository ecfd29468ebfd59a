"""ACTIVE_STANDBY load balancers in a running lab, and what takeover tests and benches observe.

Shared by ``tests/e2e/lab/`` and ``bench/failover.py``. ``lab_world`` builds a lab with its
control plane and an agent per host, waits for every host to be UP, makes an
ACTIVE_STANDBY flavor and starts the members: ``cookie_member.py`` servers on the
router's member-network address (one port each), so that losing or partitioning any host
never takes a member with it and every failed request is the VIP's, not a member's.

Who holds the VIP is read from the kernel, not from the controller: the amphora namespaces
that have the VIP address on a link (``vip_holders``), and the MAC the router has for the
VIP in its neighbour table (``router_mac``) against the holder's (``holder_mac``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lbaas.amphora.plumbing import namespace_name
from lbaas.host.runtime_api import RuntimeApiError, unix_socket_transport
from lbaas.lab.addresses import bare
from lbaas.lab.lab import Lab
from lbaas.lab.services import start_services
from lbaas.model.enums import LIVE_AMPHORA_STATUSES, AmphoraRole, HostStatus
from tests.e2e.lab.lab_api import V2, LabApi, host_list
from tests.support.vip_client import REALTIME_PRIORITY
from tests.support.vrrp_pair import Attempt, LoopingClient
from tests.support.waiting import wait_until

MEMBER_PORTS = (8081, 8082, 8083)
COOKIE_MEMBER = Path(__file__).with_name("cookie_member.py")


@dataclass
class LabWorld:
    lab: Lab
    api: LabApi
    services: dict[str, Any]
    flavor: str
    members: list[tuple[str, int]]
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def member_subnet(self) -> str:
        return str(self.services["member_subnet_ids"]["m0"])


@contextlib.contextmanager
def lab_world(
    directory: Path,
    hosts: int = 3,
    prefix: str = "w",
    spare_amphorae: int = 0,
    *,
    control: int = 1,
    code: str = "",
    realtime_members: bool = False,
    vip_prefix: int = 24,
) -> Iterator[LabWorld]:
    """A lab of ``hosts`` hosts with lbaas running and members up; always removed.
    ``spare_amphorae``: each agent's ``agent.spare_amphorae``; ``control``: control hosts;
    ``code``: the source tree every process runs (``lbaas.lab.upgrade``; "": this code);
    ``realtime_members``: the members at a real-time priority (``chrt -f``), so that a
    request fails only when lbaas's part of the path did not carry it in time;
    ``vip_prefix``: the VIP network's prefix length."""
    lab = Lab(f"{prefix}{uuid.uuid4().hex[:7]}", directory)
    started: list[subprocess.Popen[bytes]] = []
    try:
        lab.up(hosts=hosts, control=control, vip_prefix=vip_prefix)
        services = start_services(lab, spare_amphorae=spare_amphorae, code=code)
        api = LabApi(services["api_namespace"], services["api"])
        settings = services["settings"]
        wait_until(
            lambda: _statuses(lab, settings, code) == {HostStatus.UP},
            timeout=60,
            what="every lab host UP",
        )
        members = _start_members(lab, started, realtime_members)
        yield LabWorld(lab, api, services, active_standby_flavor(api), members, started)
    finally:
        for process in started:
            process.kill()
            process.wait()
        lab.down()


def _statuses(lab: Lab, settings: str, code: str) -> set[str]:
    """The hosts' statuses; none while ``lbaas host list`` fails (seen once, exit 2, just
    after the control plane started)."""
    try:
        return {h["status"] for h in host_list(lab.names.control, settings, code).values()}
    except subprocess.CalledProcessError as exc:
        print(f"lbaas host list: {exc.returncode}: {exc.stderr}", file=sys.stderr)
        return set()


def _start_members(
    lab: Lab, started: list[subprocess.Popen[bytes]], realtime: bool = False
) -> list[tuple[str, int]]:
    address = bare(lab.status()["router"]["addresses"]["m0"])
    for index, port in enumerate(MEMBER_PORTS, start=1):
        argv = [sys.executable, str(COOKIE_MEMBER), address, str(port), f"m{index}"]
        if realtime:
            argv = ["chrt", "--fifo", str(REALTIME_PRIORITY), *argv]
        started.append(
            subprocess.Popen(
                ["ip", "netns", "exec", lab.names.router, *argv],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    for port in MEMBER_PORTS:
        wait_until(
            lambda port=port: curl(lab.names.router, f"http://{address}:{port}/") is not None,  # type: ignore[misc]
            what=f"member {address}:{port}",
        )
    return [(address, port) for port in MEMBER_PORTS]


def active_standby_flavor(api: LabApi) -> str:
    data = json.dumps({"loadbalancer_topology": "ACTIVE_STANDBY"})
    body = {"name": "ha", "provider_name": "amphora", "flavor_data": data}
    profile = api.call("POST", f"{V2}/flavorprofiles", {"flavorprofile": body})
    flavor = {"name": "ha", "flavor_profile_id": profile["flavorprofile"]["id"]}
    return str(api.call("POST", f"{V2}/flavors", {"flavor": flavor})["flavor"]["id"])


def _members_pool(
    world: LabWorld, protocol: str = "HTTP", algorithm: str = "ROUND_ROBIN"
) -> dict[str, Any]:
    """A pool of the world's members (round-robin HTTP unless told)."""
    return {
        "name": "members",
        "protocol": protocol,
        "lb_algorithm": algorithm,
        "members": [
            {"address": address, "protocol_port": port, "subnet_id": world.member_subnet}
            for address, port in world.members
        ],
    }


def create_single(world: LabWorld, name: str) -> str:
    """POST a SINGLE load balancer with an HTTP listener on 80 over the world's members;
    its id. Does not wait for ACTIVE."""
    pool = _members_pool(world)
    body = {
        "name": name,
        "vip_subnet_id": world.services["vip_subnet_id"],
        "listeners": [{"protocol": "HTTP", "protocol_port": 80, "default_pool": pool}],
    }
    created = world.api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": body})
    return str(created["loadbalancer"]["id"])


def create_distributed(world: LabWorld, name: str) -> str:
    """POST a load balancer of the ``distributed`` provider (kernel L4 on every host) with
    a TCP listener on 80 over the world's members, hashed by SOURCE_IP_PORT; its id. Does
    not wait for ACTIVE."""
    pool = _members_pool(world, "TCP", "SOURCE_IP_PORT")
    body = {
        "name": name,
        "vip_subnet_id": world.services["vip_subnet_id"],
        "provider": "distributed",
        "listeners": [{"protocol": "TCP", "protocol_port": 80, "default_pool": pool}],
    }
    created = world.api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": body})
    return str(created["loadbalancer"]["id"])


def create_pair(world: LabWorld, name: str, persistence: dict[str, str] | None = None) -> str:
    """POST an ACTIVE_STANDBY load balancer with its whole graph (an HTTP listener on 80, a
    round-robin pool of the world's members); its id. Does not wait for ACTIVE."""
    pool = _members_pool(world)
    if persistence is not None:
        pool["session_persistence"] = persistence
    body = {
        "name": name,
        "vip_subnet_id": world.services["vip_subnet_id"],
        "flavor_id": world.flavor,
        "listeners": [{"protocol": "HTTP", "protocol_port": 80, "default_pool": pool}],
    }
    created = world.api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": body})
    return str(created["loadbalancer"]["id"])


def vip_of(world: LabWorld, lb_id: str) -> str:
    return str(world.api.call("GET", f"{V2}/loadbalancers/{lb_id}")["loadbalancer"]["vip_address"])


def live_amphorae(world: LabWorld, lb_id: str) -> list[dict[str, Any]]:
    path = f"/v2/octavia/amphorae?loadbalancer_id={lb_id}"
    amphorae = world.api.call("GET", path)["amphorae"]
    return [a for a in amphorae if a["status"] in LIVE_AMPHORA_STATUSES]


def amphora_namespace(world: LabWorld, amphora: dict[str, Any]) -> str:
    host = str(amphora["compute_id"])
    return namespace_name(str(amphora["id"]), world.lab.names.host_prefix(int(host[1:])))


def keepalived_entered(world: LabWorld, amphora: dict[str, Any], state: AmphoraRole) -> int:
    """How often the amphora's keepalived logged entering ``state``."""
    log = world.lab.services_dir / str(amphora["compute_id"]) / "amphorae"
    try:
        text = (log / str(amphora["id"]) / "keepalived.log").read_text(errors="replace")
    except OSError:
        return 0
    return text.count(f"Entering {state} STATE")


def stick_entries(world: LabWorld, amphora: dict[str, Any]) -> int:
    """How many entries the amphora's HAProxy holds in its stick tables (0: unreadable),
    read through its master CLI from the current worker."""
    root = world.lab.services_dir / str(amphora["compute_id"]) / "amphorae"
    ask = unix_socket_transport(root / str(amphora["id"]) / "master.sock")
    try:
        listing = ask("@1 show table; quit")
    except RuntimeApiError:
        return 0
    return sum(
        int(word.split(":", 1)[1].rstrip(","))
        for word in listing.split()
        if word.startswith("used:")
    )


def _ip(namespace: str, *argv: str) -> str:
    done = subprocess.run(["ip", "-n", namespace, "-o", *argv], capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else ""


def vip_holders(world: LabWorld, vip: str, skip_hosts: tuple[str, ...] = ()) -> list[str]:
    """The lab's amphora namespaces with ``vip`` on a link (those of ``skip_hosts`` aside:
    a lost host's namespaces keep their addresses, as a dead machine's NIC would)."""
    names = world.lab.names
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    skipped = tuple(names.host_prefix(int(h[1:])) for h in skip_hosts)
    return [
        namespace
        for namespace in (line.split()[0] for line in listed.splitlines() if line.strip())
        if names.is_ours(namespace) and "-amp-" in namespace and not namespace.startswith(skipped)
        if f" {vip}/" in _ip(namespace, "-4", "addr", "show")
    ]


def holder_mac(namespace: str, vip: str) -> str | None:
    """The MAC of the link that holds ``vip`` in ``namespace``."""
    for line in _ip(namespace, "-4", "addr", "show").splitlines():
        if f" {vip}/" in line:
            link = _ip(namespace, "link", "show", "dev", line.split()[1])
            words = link.split()
            return words[words.index("link/ether") + 1] if "link/ether" in words else None
    return None


def router_mac(world: LabWorld, vip: str) -> str | None:
    """The MAC the router would send the VIP's packets to (None: unresolved or failed)."""
    words = _ip(world.lab.names.router, "neigh", "show", "to", vip).split()
    return words[words.index("lladdr") + 1] if "lladdr" in words else None


def kill_namespace(namespace: str) -> float:
    """SIGKILL every process in ``namespace`` (an amphora's keepalived and HAProxy); when."""
    pids = subprocess.run(
        ["ip", "netns", "pids", namespace], capture_output=True, text=True
    ).stdout.split()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGKILL)
    return time.monotonic()


def curl(namespace: str, url: str, *extra: str, timeout: float = 2.0) -> str | None:
    argv = ["ip", "netns", "exec", namespace, "curl", "-sf", "-m", str(timeout), *extra, url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 30, check=False)
    return done.stdout if done.returncode == 0 else None


# The client's loop, run inside the lab's client namespace. Bounded in time; one line per
# request: start and end (CLOCK_MONOTONIC, shared by every process) and the body or "".
_LOOP = r"""
import http.client, sys, time
address, timeout, pause, limit = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
end = time.monotonic() + limit
while time.monotonic() < end:
    started, body = time.monotonic(), ""
    connection = http.client.HTTPConnection(address, 80, timeout=timeout)
    try:
        connection.request("GET", "/", headers={"Connection": "close"})
        response = connection.getresponse()
        text = response.read().decode().strip()
        body = text if response.status == 200 else ""
    except (OSError, http.client.HTTPException):
        pass
    finally:
        connection.close()
    print(f"{started:.6f}\t{time.monotonic():.6f}\t{body}", flush=True)
    time.sleep(pause)
"""


@dataclass
class NamespaceLoopingClient(LoopingClient):
    """``LoopingClient`` whose requests leave from a namespace (the lab's client)."""

    namespace: str = ""
    limit: float = 900.0
    _process: subprocess.Popen[str] | None = None

    def __enter__(self) -> NamespaceLoopingClient:
        argv = [sys.executable, "-c", _LOOP, self.address, str(self.timeout), str(self.pause)]
        self._process = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace, *argv, str(self.limit)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            started, ended, body = line.rstrip("\n").split("\t", 2)
            self.attempts.append(Attempt(float(started), float(ended), body or None))

    def __exit__(self, *exc: object) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        super().__exit__(*exc)  # the reader thread ends at the pipe's end of file
        if self._process is not None and self._process.stdout is not None:
            self._process.stdout.close()
