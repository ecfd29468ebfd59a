"""An ACTIVE_STANDBY pair for real, on one host: for the VRRP tests and ``bench/failover.py``.

Two amphora namespaces on one VIP bridge, each with HAProxy (rendered by the real renderer,
with the pair's ``peers`` and SOURCE_IP persistence) and keepalived run by a real
``AmphoraRegistry`` in netns mode; two backend namespaces on a member bridge serve their own
names over HTTP. The host holds the VIP subnet's gateway address, so requests from the
host reach the VIP, which lives only in namespaces this harness created. ``close`` removes
every amphora, namespace, bridge and process it made, whatever happened before.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from lbaas.amphora.plumbing import bridge_name, namespace_name, plan_plumbing, vip_leg
from lbaas.amphora.registry import AmphoraRegistry
from lbaas.host.keepalived_exec import KeepalivedLauncher
from lbaas.host.real import RealHostOps
from lbaas.model.enums import AmphoraRole, PersistenceType
from lbaas.render.haproxy import HaproxyContext, render_haproxy
from lbaas.render.haproxy.context import HaproxyPeer, HaproxyPeers
from lbaas.wire.amphora import (
    SPEC_FORMAT,
    AmphoraSpec,
    HaproxyFacts,
    MemberNetwork,
    NetworkSpec,
    ServerSetting,
    VipSpec,
    VrrpSpec,
    amphora_paths,
)
from tests.support.graphs import listener, load_balancer, member, persistence, pool
from tests.support.scratch_subnets import pick_subnets

PORT = 8080
BACKEND_PORT = 8000
PEER_PORT = 1025
PRIORITIES = {AmphoraRole.MASTER: 200, AmphoraRole.BACKUP: 100}


@dataclass
class Attempt:
    """One request of the looping client."""

    started: float
    ended: float
    body: str | None  # None: failed


@dataclass
class LoopingClient:
    """Requests the VIP in a loop from a thread, each on a new connection."""

    address: str
    port: int = PORT
    pause: float = 0.01
    timeout: float = 0.25
    attempts: list[Attempt] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> LoopingClient:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            body = fetch(self.address, self.port, self.timeout)
            self.attempts.append(Attempt(started, time.monotonic(), body))
            self._stop.wait(self.pause)

    def served_after(self, moment: float) -> Attempt | None:
        """The first request started after ``moment`` that succeeded."""
        return next((a for a in list(self.attempts) if a.started > moment and a.body), None)

    def failed_between(self, start: float, end: float) -> int:
        return sum(1 for a in list(self.attempts) if start <= a.started < end and a.body is None)

    def longest_gap(self) -> float:
        """Longest time between the ends of two successive successful requests."""
        ends = [a.ended for a in list(self.attempts) if a.body is not None]
        return max((b - a for a, b in zip(ends, ends[1:], strict=False)), default=0.0)


def fetch(address: str, port: int, timeout: float) -> str | None:
    """One GET on a new connection; the body, or None when it failed."""
    connection = http.client.HTTPConnection(address, port, timeout=timeout)
    try:
        connection.request("GET", "/", headers={"Connection": "close"})
        response = connection.getresponse()
        body = response.read().decode()
        return body if response.status == 200 else None
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()


@dataclass
class VrrpPair:
    """Build with ``start()``; always ``close()``."""

    root: Path
    advert_interval_ms: int = 100
    realtime_priority: int | None = None
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:5])
    host: RealHostOps = field(default_factory=RealHostOps)
    namespaces: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    amphorae: dict[str, str] = field(default_factory=dict)  # id -> own VRRP address
    roles: dict[str, AmphoraRole] = field(default_factory=dict)
    version: int = 0

    def __post_init__(self) -> None:
        self.manager = AmphoraRegistry(
            self.root / "amphorae", self.host, mode="netns", keepalived=KeepalivedLauncher()
        )
        vip_net, member_net = pick_subnets(2)
        self.vip_prefix = str(vip_net.network_address).rsplit(".", 1)[0]
        self.member_prefix = str(member_net.network_address).rsplit(".", 1)[0]
        self.vip = f"{self.vip_prefix}.10"
        self.vip_network = f"vip-{self.tag}"
        self.member_network = f"members-{self.tag}"
        self._next_address = 11

    # --- building -----------------------------------------------------------------------

    def start(self) -> None:
        """Backends, then both amphorae (MASTER first), then wait for one VIP holder."""
        for index in (1, 2):
            self._backend(f"b{index}", f"{self.member_prefix}.{10 + index}")
        first, second = self._new_id("a"), self._new_id("b")
        self.roles = {first: AmphoraRole.MASTER, second: AmphoraRole.BACKUP}
        self.put_all()

    def _new_id(self, suffix: str) -> str:
        amphora_id = f"amp-{self.tag}-{suffix}{len(self.amphorae)}"
        self.amphorae[amphora_id] = f"{self.vip_prefix}.{self._next_address}"
        self._next_address += 1
        return amphora_id

    def live(self) -> list[str]:
        return list(self.roles)

    def put_all(self) -> None:
        self.version += 1
        for amphora_id in self.live():
            self.manager.put(amphora_id, self.spec(amphora_id))

    def spec(self, amphora_id: str) -> AmphoraSpec:
        (peer,) = [other for other in self.live() if other != amphora_id]
        paths = amphora_paths(str(self.manager.root), amphora_id)
        members = [member(f"m{i}", f"{self.member_prefix}.{10 + i}", BACKEND_PORT) for i in (1, 2)]
        graph = load_balancer(
            [listener("http", port=PORT, default_pool="web")],
            [pool("web", members, sticky=persistence(PersistenceType.SOURCE_IP))],
            vip_address=self.vip,
            ident=f"lb-{self.tag}",
        )
        peers = HaproxyPeers(
            local_name=amphora_id,
            members=tuple(
                HaproxyPeer(other, self.amphorae[other], PEER_PORT) for other in self.live()
            ),
        )
        context = HaproxyContext(
            bind_address=self.vip,
            runtime_socket=paths.runtime_socket,
            state_dir=paths.state_dir,
            maxconn_default=2000,
            peers=peers,
        )
        rendered = render_haproxy(graph, context)
        role = self.roles[amphora_id]
        return AmphoraSpec(
            spec_format=SPEC_FORMAT,
            version=self.version,
            loadbalancer_id=f"lb-{self.tag}",
            haproxy_config=rendered.text,
            haproxy_facts=HaproxyFacts(
                runtime_socket=rendered.runtime_socket,
                server_state_file=rendered.server_state_file,
                maxconn=rendered.maxconn,
                servers=tuple(
                    ServerSetting(
                        backend=s.backend, server=s.server, weight=s.weight, disabled=s.disabled
                    )
                    for s in rendered.servers
                ),
                fixed_digest=rendered.fixed_digest,
            ),
            vip=VipSpec(
                address=self.vip, subnet_cidr=f"{self.vip_prefix}.0/24", network_id=self.vip_network
            ),
            network=NetworkSpec(
                vip_host_address=f"{self.vip_prefix}.1",
                member_networks=(
                    MemberNetwork(
                        network_id=self.member_network,
                        subnet_cidr=f"{self.member_prefix}.0/24",
                        address=self._member_address(amphora_id),
                    ),
                ),
            ),
            vrrp=VrrpSpec(
                role=role,
                priority=PRIORITIES[role],
                vrrp_id=42,
                own_address=self.amphorae[amphora_id],
                peer_address=self.amphorae[peer],
                advert_interval_ms=self.advert_interval_ms,
                realtime_priority=self.realtime_priority,
            ),
        )

    def _member_address(self, amphora_id: str) -> str:
        """The amphora's address on the member network: fixed by its VRRP address."""
        return f"{self.member_prefix}.{100 + int(self.amphorae[amphora_id].rsplit('.', 1)[1])}"

    def _backend(self, role: str, address: str) -> None:
        namespace = f"lbt-{self.tag}-{role}"
        outer, inner = f"lbt{self.tag}{role}h", f"lbt{self.tag}{role}n"
        bridge = bridge_name(self.member_network)
        self.host.create_bridge(bridge)
        self.host.create_namespace(namespace)
        self.namespaces.append(namespace)
        self.host.create_veth_pair(outer, inner)
        self.host.move_to_namespace(inner, namespace)
        self.host.attach_to_bridge(outer, bridge)
        self.host.set_link_up(outer)
        self.host.set_link_up(inner, namespace)
        self.host.add_address(inner, f"{address}/24", namespace)
        docroot = self.root / f"docroot-{role}"
        docroot.mkdir(parents=True, exist_ok=True)
        (docroot / "index.html").write_text(f"backend-{role}")
        argv = ["ip", "netns", "exec", namespace, sys.executable, "-m", "http.server"]
        argv += [str(BACKEND_PORT), "--bind", address, "--directory", str(docroot)]
        self.processes.append(
            subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        )

    # --- looking ------------------------------------------------------------------------

    def holders(self) -> list[str]:
        """The amphorae whose VIP link holds the VIP now (one, when all is well)."""
        found = []
        for amphora_id in self.live():
            plan = plan_plumbing(amphora_id, self.spec(amphora_id))
            link = vip_leg(plan, self.spec(amphora_id)).amphora_end
            done = self.host.run_in_namespace(
                plan.namespace, ["ip", "-j", "addr", "show", "dev", link], timeout=10
            )
            entries = json.loads(done.stdout) if done.returncode == 0 and done.stdout else []
            if any(
                info.get("local") == self.vip
                for entry in entries
                for info in entry.get("addr_info", [])
            ):
                found.append(amphora_id)
        return found

    def entered(self, amphora_id: str, state: AmphoraRole) -> int:
        """How often the amphora's keepalived logged entering ``state`` (MASTER, BACKUP)."""
        log = self.manager.root / amphora_id / "keepalived.log"
        try:
            return log.read_text(errors="replace").count(f"Entering {state} STATE")
        except OSError:
            return 0

    # --- breaking -----------------------------------------------------------------------

    def kill(self, amphora_id: str) -> float:
        """SIGKILL the amphora's keepalived (both processes) and HAProxy (master, workers).

        Returns the monotonic time right after the last signal was sent.
        """
        directory = self.manager.root / amphora_id
        victims: list[int] = []
        # The VRRP child first: when keepalived's parent dies the child gets SIGTERM
        # (parent-death signal) and would hand over politely with priority 0, which is
        # not the crash this simulates.
        for name in ("keepalived-vrrp.pid", "haproxy.pid", "keepalived.pid"):
            pid = _pid_in(directory / name)
            if pid is not None:
                victims += [*_children_of(pid), pid]
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return time.monotonic()

    def replace(self, dead: str) -> str:
        """Delete ``dead`` and build a new amphora in its place as BACKUP; its id."""
        self.manager.delete(dead)
        del self.roles[dead]
        new = self._new_id("r")
        (survivor,) = self.live()
        self.roles = {survivor: AmphoraRole.MASTER, new: AmphoraRole.BACKUP}
        self.put_all()
        return new

    # --- cleaning up --------------------------------------------------------------------

    def close(self) -> None:
        for amphora_id in self.manager.amphora_ids():
            self.manager.delete(amphora_id)
        for process in self.processes:
            process.kill()
            process.wait(10)
        self.processes.clear()
        for namespace in self.namespaces:
            self.host.delete_namespace(namespace)
        self.namespaces.clear()
        for network in (self.vip_network, self.member_network):
            bridge = bridge_name(network)
            self.host.delete_link(bridge)
        for amphora_id in self.amphorae:
            self.host.delete_namespace(namespace_name(amphora_id))


def _pid_in(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) > 1 and fields[1] == str(pid):
            found.append(int(entry.name))
    return found
