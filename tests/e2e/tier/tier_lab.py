"""A lab with an L4 tier: router + three L4 nodes (h1-h3) running BIRD and the L4 engine,
three TCP backends on h4's member network, a client in the lab's client namespace.

    <lab>-cli ── router (BIRD, ECMP on the 5-tuple) ══ fabric BGP ══ h1 h2 h3 (BIRD, L4 engine)
                                                                         │ member network m0
                                                                         h4: backends :8001-8003

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

from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service
from lbaas.lab import processes
from lbaas.lab.addresses import FIRST_HOST, address, bare
from lbaas.lab.lab import Lab
from lbaas.lab.tier import LabTier

PEERS = str(Path(__file__).resolve().parents[1] / "l4" / "l4_peers.py")
NODES = (1, 2, 3)
MEMBER_HOST = 4
BACKEND_PORTS = (8001, 8002, 8003)
PORT = 80
LB_ID = "7a1e4c3b-0d2f-4e55-9a18-5c6b7d8e9f01"


@dataclass
class TierLab:
    lab: Lab
    tier: LabTier
    vip: str

    def service(self) -> L4Service:
        state = self.lab.state()
        member = bare(address(state.networks["m0"], FIRST_HOST + MEMBER_HOST))
        members = tuple(L4Member(f"b{port}", member, port) for port in BACKEND_PORTS)
        return L4Service(LB_ID, self.vip, (L4Listener(L4Protocol.TCP, PORT, members),))

    def names(self, count: int) -> list[str]:
        """The backends answering ``count`` new TCP connections from the client to the VIP."""
        argv = ["ip", "netns", "exec", self.lab.names.client, sys.executable, PEERS, "tcp"]
        done = subprocess.run(
            [*argv, self.vip, str(PORT), str(count)],
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


def _start_backends(lab: Lab) -> None:
    state = lab.state()
    member = bare(address(state.networks["m0"], FIRST_HOST + MEMBER_HOST))
    namespace = lab.names.host(MEMBER_HOST)
    directory = lab.services_dir / "backends"
    directory.mkdir(parents=True, exist_ok=True)
    for port in BACKEND_PORTS:
        log = directory / f"{port}.log"
        argv = [sys.executable, PEERS, "server", f"b{port}", member, str(port)]
        lab.register_process(f"h{MEMBER_HOST}", processes.start(namespace, argv, log, directory))
        processes.wait_listening(namespace, member, port, log, 20.0)


@contextlib.contextmanager
def tier_lab(name: str, state_dir: Path, *, bfd: bool = True) -> Iterator[TierLab]:
    """The lab with its tier up and the VIP announced by every node; removed afterwards."""
    lab = Lab(name, state_dir)
    with lab.running(hosts=len(NODES) + 1):
        tier = LabTier(lab, NODES, bfd=bfd)
        tier.start()
        built = TierLab(lab, tier, tier.vip())
        _start_backends(lab)
        for index in NODES:
            tier.engine(index).apply(built.service())
            tier.announce(index, [built.vip])
        tier.wait_next_hops(built.vip, set(NODES), timeout=30.0)
        yield built
