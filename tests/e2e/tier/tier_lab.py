"""A lab with an L4 tier: router + three L4 nodes (h1-h3) running BIRD and the L4 engine,
three TCP backends on h4's member network, a client in the lab's client namespace. Two
VIPs: ``vip`` balanced in NAT mode (the L4 engine, members answer through the node) and
``dsr_vip`` in direct server return (members h4 and h5 hold it on ``lo`` and answer the
client through the router themselves).

    <lab>-cli ── router (BIRD, ECMP on the 5-tuple) ══ fabric BGP ══ h1 h2 h3 (BIRD, L4 engine)
                                                                         │ member network m0
                                    h4: NAT backends :8001-8003, DSR backend dsr_vip:80 (d4)
                                    h5: DSR backend dsr_vip:80 (d5)

Shared by tests/e2e/tier and bench/l4_tier.py. Everything lives in the lab's namespaces and
processes registered with it, so ``Lab.down`` (always called by ``running``) removes it all.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lbaas.host.commands import run_command
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service
from lbaas.lab import processes
from lbaas.lab.addresses import FIRST_HOST, address, bare
from lbaas.lab.lab import Lab
from lbaas.lab.tier import LabTier
from lbaas.lab.tier_dsr import LabDsr

PEERS = str(Path(__file__).resolve().parents[1] / "l4" / "l4_peers.py")
HOLD = str(Path(__file__).resolve().parent / "tier_hold.py")
NODES = (1, 2, 3)
MEMBER_HOST = 4
BACKEND_PORTS = (8001, 8002, 8003)
PORT = 80
DSR_MEMBER_HOSTS = (4, 5)
LB_ID = "7a1e4c3b-0d2f-4e55-9a18-5c6b7d8e9f01"
DSR_LB_ID = "d5e0c1a2-3b4c-4d5e-8f60-718293a4b5c6"
STATIC_LB_ID = "5a7c0b1d-2e3f-4a5b-8c6d-7e8f9a0b1c2d"


@dataclass
class TierLab:
    lab: Lab
    tier: LabTier
    vip: str
    dsr_vip: str
    dsr: LabDsr
    static_vip: str  # DSR too, routed by the router's static route instead of BGP

    def service(self) -> L4Service:
        state = self.lab.state()
        member = bare(address(state.networks["m0"], FIRST_HOST + MEMBER_HOST))
        members = tuple(L4Member(f"b{port}", member, port) for port in BACKEND_PORTS)
        return L4Service(LB_ID, self.vip, (L4Listener(L4Protocol.TCP, PORT, members),))

    def dsr_service(self, vip: str | None = None) -> L4Service:
        state = self.lab.state()
        members = tuple(
            L4Member(f"d{host}", bare(address(state.networks["m0"], FIRST_HOST + host)), PORT)
            for host in DSR_MEMBER_HOSTS
        )
        lb_id = DSR_LB_ID if vip is None else STATIC_LB_ID
        listeners = (L4Listener(L4Protocol.TCP, PORT, members),)
        return L4Service(lb_id, vip or self.dsr_vip, listeners)

    def names(self, count: int, vip: str | None = None) -> list[str]:
        """The backends answering ``count`` new TCP connections from the client to a VIP."""
        argv = ["ip", "netns", "exec", self.lab.names.client, sys.executable, PEERS, "tcp"]
        done = subprocess.run(
            [*argv, vip or self.vip, str(PORT), str(count)],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        names: list[str] = json.loads(done.stdout)
        return names

    def flows_per_node(self) -> dict[int, int]:
        """New flows each node's L4 engine balanced (its rule counter)."""
        return {index: sum(self.tier.engine(index).new_flows(LB_ID).values()) for index in NODES}

    def dsr_flows_per_node(self) -> dict[int, int]:
        """New DSR flows each node balanced (the SYN counter of its DSR table)."""
        hosts = {index: self.lab.names.host(index) for index in NODES}
        return {index: sum(self.dsr.new_flows(host).values()) for index, host in hosts.items()}


def _start_backends(lab: Lab) -> None:
    state = lab.state()
    member = bare(address(state.networks["m0"], FIRST_HOST + MEMBER_HOST))
    namespace = lab.names.host(MEMBER_HOST)
    # In the host's own directory: the only one of the lab's its processes see.
    directory = lab.services_dir / f"h{MEMBER_HOST}" / "backends"
    directory.mkdir(parents=True, exist_ok=True)
    for port in BACKEND_PORTS:
        log = directory / f"{port}.log"
        argv = [sys.executable, PEERS, "server", f"b{port}", member, str(port)]
        lab.register_process(f"h{MEMBER_HOST}", processes.start(namespace, argv, log, directory))
        processes.wait_listening(namespace, member, port, log, 20.0)


def _start_dsr(built: TierLab) -> None:
    lab = built.lab
    services = [built.dsr_service(), built.dsr_service(built.static_vip)]
    built.dsr.router(lab.names.router)
    for host in DSR_MEMBER_HOSTS:
        namespace = lab.names.host(host)
        built.dsr.member(namespace, [built.dsr_vip, built.static_vip], ["mem0", "vip0"])
        log = lab.services_dir / f"h{host}" / "backends" / f"dsr{host}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        # One backend for both DSR VIPs: it listens on every address of the member.
        argv = [sys.executable, PEERS, "server", f"d{host}", "0.0.0.0", str(PORT)]
        lab.register_process(f"h{host}", processes.start(namespace, argv, log, log.parent))
        processes.wait_listening(namespace, built.dsr_vip, PORT, log, 20.0)
    for index in NODES:
        built.dsr.node(lab.names.host(index), services, "mem0")
    built.tier.route_statically(built.static_vip, NODES)


@contextlib.contextmanager
def tier_lab(name: str, state_dir: Path, *, bfd: bool = True) -> Iterator[TierLab]:
    """The lab with its tier up and the VIP announced by every node; removed afterwards."""
    lab = Lab(name, state_dir)
    with lab.running(hosts=len(NODES) + len(DSR_MEMBER_HOSTS)):
        tier = LabTier(lab, NODES, bfd=bfd)
        tier.start()
        built = TierLab(lab, tier, tier.vip(), tier.vip(1), LabDsr(run_command), tier.vip(2))
        _start_backends(lab)
        _start_dsr(built)
        for index in NODES:
            tier.engine(index).apply(built.service())
            tier.announce(index, [built.vip, built.dsr_vip])
        tier.wait_next_hops(built.vip, set(NODES), timeout=30.0)
        tier.wait_next_hops(built.dsr_vip, set(NODES), timeout=30.0)
        yield built
