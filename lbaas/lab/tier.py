"""An L4 tier in a lab: BIRD on the router and on some hosts (the nodes), peered over the fabric.

The router runs BIRD with one eBGP session per node and ECMP towards them, hashing on the
5-tuple (``fib_multipath_hash_policy=1`` in its namespace). Each node forwards, runs BIRD
announcing the VIPs it is given, and masquerades the flows its L4 engine DNATs towards the
member networks (NAT return: ``lbaas.tier.nat_return``). The L4 engine itself is the
caller's: ``engine(i)`` programs node ``i``'s namespace.

BIRD runs in the foreground under ``nsenter`` (``processes.start``), each registered with the
lab: the router's as ``rtr``, a node's as its host (``h2``), so ``host-down h2`` kills it and
``down`` kills them all. Files live in ``<services_dir>/tier/<rtr|hN>/``. A node announces
what it is told here (kept in this object only) and what its lbaas agent writes into
``agent-vips.conf`` (the distributed provider's VIPs placed in its group), which its BIRD
configuration includes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

from lbaas.host.commands import run_command
from lbaas.l4.engine import L4Engine
from lbaas.l4.host.real import RealNftOps
from lbaas.lab import names as n
from lbaas.lab import processes
from lbaas.lab.addresses import FIRST_HOST, ROUTER_HOST, address, bare
from lbaas.lab.base import LabError, Runner
from lbaas.lab.lab import Lab
from lbaas.lab.netns import Netns
from lbaas.lab.services import tier_node_files
from lbaas.lab.state import LabState
from lbaas.private_files import make_private_directory, write_private
from lbaas.tier import bird, static_routes
from lbaas.tier.groups import TierGroups
from lbaas.tier.host.bird import BirdCommandFailed, BirdControl, parse_check
from lbaas.tier.nat_return import render_nat_return

ROUTER = "rtr"
_START_TIMEOUT = 20.0
_POLL = 0.02


def node_protocol(index: int) -> str:
    """The router's BGP protocol name for node ``index``."""
    return f"h{index}"


class LabTier:
    def __init__(
        self, lab: Lab, nodes: Sequence[int], *, bfd: bool = True, run: Runner = run_command
    ) -> None:
        self.lab = lab
        self.nodes = tuple(nodes)
        self._bfd = bird.Bfd(n.FABRIC_IF) if bfd else None
        self._netns = Netns(run)
        self._vips: dict[int, tuple[str, ...]] = {index: () for index in self.nodes}

    # -- addresses ------------------------------------------------------------------------

    def _state(self) -> LabState:
        state = self.lab.state()
        if not self.nodes or not all(1 <= index <= state.hosts for index in self.nodes):
            raise LabError(f"tier nodes {self.nodes} are not hosts h1-h{state.hosts}")
        return state

    def _fabric(self, state: LabState, host: int) -> str:
        return bare(address(state.networks["fab"], host))

    def vip(self, offset: int = 0) -> str:
        """A VIP for the tier: the VIP network's .200 and up (no host holds those)."""
        return bare(address(self._state().networks["vip"], 200 + offset))

    def _dir(self, owner: str) -> Path:
        path = self.lab.services_dir / "tier" / owner
        make_private_directory(path)
        return path

    # -- starting -------------------------------------------------------------------------

    def start(self) -> None:
        """Set up the router and every node, start their BIRDs and wait for the sessions."""
        state = self._state()
        router = self.lab.names.router
        self._netns.sysctl(router, "net.ipv4.fib_multipath_hash_policy=1")
        config = bird.RouterConfig(
            router_id=self._fabric(state, ROUTER_HOST),
            nodes=tuple(
                bird.Peer(node_protocol(i), self._fabric(state, FIRST_HOST + i), bird.NODE_ASN)
                for i in self.nodes
            ),
            vip_networks=(state.networks["vip"],),
            bfd=self._bfd,
        )
        self._start_bird(router, ROUTER, bird.render_router(config))
        member_interfaces = tuple(
            n.inner_interface(net) for net in state.networks if net[:1] == "m"
        )
        for index in self.nodes:
            host = self.lab.names.host(index)
            self._netns.sysctl(host, "net.ipv4.ip_forward=1")
            RealNftOps(host).load(render_nat_return(member_interfaces))
            self.start_node(index)
        self.wait_sessions(set(self.nodes))

    def start_node(self, index: int) -> None:
        """Start node ``index``'s BIRD, announcing what it was last told to (again, after
        ``host-down``), and what its agent's routes file holds."""
        routes = self._agent_routes(index)
        make_private_directory(routes.parent)
        if not routes.exists():
            write_private(routes, "")
        self._start_bird(self.lab.names.host(index), f"h{index}", self._node_config(index))

    def _node_config(self, index: int) -> str:
        state = self._state()
        return bird.render_node(
            bird.NodeConfig(
                router_id=self._fabric(state, FIRST_HOST + index),
                router=bird.Peer("uplink", self._fabric(state, ROUTER_HOST), bird.ROUTER_ASN),
                vips=self._vips[index],
                bfd=self._bfd,
                include=str(self._agent_routes(index)),
            )
        )

    def _agent_routes(self, index: int) -> Path:
        """The VIP routes node ``index``'s lbaas agent writes (``agent.tier_vips_file``)."""
        return tier_node_files(self.lab.services_dir, index)[1]

    def _start_bird(self, namespace: str, owner: str, text: str) -> None:
        directory = self._dir(owner)
        config = directory / "bird.conf"
        write_private(config, text)
        parse_check(config)
        argv = ["bird", "-f", "-c", str(config), "-s", "bird.ctl"]
        log = directory / "bird.log"
        self.lab.register_process(owner, processes.start(namespace, argv, log, directory))
        control = self.control(owner)
        deadline = time.monotonic() + _START_TIMEOUT
        while True:
            try:
                control.command("show", "status")
                return
            except BirdCommandFailed:
                if time.monotonic() > deadline:
                    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                    raise LabError(f"BIRD did not start in {namespace}; {log}:\n{tail}") from None
                time.sleep(_POLL)

    def control(self, owner: str) -> BirdControl:
        """The control socket of ``rtr``'s or ``hN``'s BIRD."""
        return BirdControl(self.lab.services_dir / "tier" / owner / "bird.ctl")

    def engine(self, index: int) -> L4Engine:
        """An L4 engine programming node ``index``'s namespace."""
        return L4Engine(RealNftOps(self.lab.names.host(index)))

    # -- announcing -----------------------------------------------------------------------

    def announce(self, index: int, vips: Iterable[str]) -> None:
        """Node ``index`` announces exactly ``vips`` from now on (an empty set withdraws all)."""
        self._vips[index] = tuple(sorted(set(vips)))
        directory = self._dir(f"h{index}")
        write_private(directory / "bird.conf", self._node_config(index))
        parse_check(directory / "bird.conf")
        self.control(f"h{index}").configure()

    def apply_groups(self, groups: TierGroups) -> None:
        """Every node announces the VIPs of its groups; only changed nodes reconfigure."""
        for index, vips in groups.announcements(self.nodes).items():
            if vips != self._vips[index]:
                self.announce(index, vips)

    def route_statically(self, vip: str, nodes: Iterable[int]) -> None:
        """The control plane's static route on the router: ``vip`` to exactly ``nodes``."""
        state = self._state()
        hops = [self._fabric(state, FIRST_HOST + index) for index in nodes]
        argv = static_routes.route_command(vip, hops)
        if argv[1] == "del":
            self._netns.check(["ip", "-n", self.lab.names.router, "route", "flush", argv[2]])
        else:
            self._netns.ip(self.lab.names.router, *argv)

    def announced(self, index: int) -> tuple[str, ...]:
        """What node ``index`` was last told to announce."""
        return self._vips[index]

    # -- observing ------------------------------------------------------------------------

    def next_hops(self, vip: str) -> set[int]:
        """The nodes the router's kernel sends ``vip`` to (its ECMP next hops)."""
        state = self._state()
        listing = self._netns.ip(self.lab.names.router, "-j", "route", "show", f"{vip}/32")
        gateways: set[str] = set()
        for route in json.loads(listing or "[]"):
            hops = route.get("nexthops") or [route]
            gateways |= {hop["gateway"] for hop in hops if "gateway" in hop}
        by_address = {self._fabric(state, FIRST_HOST + i): i for i in range(1, state.hosts + 1)}
        return {by_address[gateway] for gateway in gateways if gateway in by_address}

    def wait_next_hops(self, vip: str, expected: set[int], timeout: float) -> float:
        """Seconds until the router's route to ``vip`` goes to exactly ``expected``."""
        started = time.monotonic()
        while (seen := self.next_hops(vip)) != expected:
            if time.monotonic() - started > timeout:
                raise LabError(
                    f"{vip}: router sends to nodes {sorted(seen)}, not {sorted(expected)}"
                )
            time.sleep(_POLL)
        return time.monotonic() - started

    def wait_sessions(self, expected: set[int], timeout: float = _START_TIMEOUT) -> None:
        """Wait until the router's sessions with exactly ``expected`` nodes are Established."""
        wanted = {node_protocol(index) for index in expected}
        deadline = time.monotonic() + timeout
        while (up := self.control(ROUTER).established()) != wanted:
            if time.monotonic() > deadline:
                raise LabError(f"BGP sessions up: {sorted(up)}, expected {sorted(wanted)}")
            time.sleep(0.1)
