"""Direct server return in a lab tier: nodes mark and route, members hold the VIP on ``lo``.

What ``lbaas.tier.dsr`` renders, run in the lab's namespaces:

- a node loads the DSR table and, per member address, a routing table (id = the member's
  mark) whose default route goes via the member on the member network, and an ``ip rule``
  sending that mark to it;
- a member gets the VIP on ``lo`` and the ARP/``rp_filter`` settings that keep it from
  answering ARP for the VIP while accepting packets for it;
- the router accepts replies whose source is a VIP it routes to the nodes (loose
  ``rp_filter``): in DSR they come from the members, by another interface;
- ``add_member``: in a lab with services (whose tier agents program DSR themselves for the
  distributed provider's VIPs, ``tier.return_mode = dsr``), a member namespace with no
  agent, wired as an operator wires a real backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lbaas.host.commands import run_command
from lbaas.l4.host.real import RealNftOps
from lbaas.l4.service import L4Service
from lbaas.lab import names as n
from lbaas.lab.addresses import ROUTER_HOST, address, bare
from lbaas.lab.base import Runner
from lbaas.lab.lab import Lab
from lbaas.lab.netns import Netns
from lbaas.tier import dsr


class LabDsr:
    def __init__(self, run: Runner) -> None:
        self._run = run
        self._netns = Netns(run)

    def router(self, namespace: str) -> None:
        self._netns.sysctl(namespace, "net.ipv4.conf.all.rp_filter=2")

    def node(self, namespace: str, services: Sequence[L4Service], interface: str) -> None:
        """Program a node: its routes first, then the table that starts marking."""
        for member in dsr.member_addresses(services):
            self._netns.ip(namespace, *dsr.route_command(member, interface))
            # An earlier run's rule may be there: delete (failure is fine), then add.
            self._run(["ip", "-n", namespace, *dsr.rule_command(member, "del")])
            self._netns.ip(namespace, *dsr.rule_command(member, "add"))
        RealNftOps(namespace).load(dsr.render(services))

    def member(self, namespace: str, vips: Iterable[str], interfaces: Iterable[str]) -> None:
        self._netns.sysctl(namespace, *dsr.member_sysctls(interfaces))
        for vip in vips:
            self._netns.ip(namespace, "addr", "replace", f"{vip}/32", "dev", "lo")

    def new_flows(self, namespace: str) -> dict[str, int]:
        """New TCP flows the node's DSR table balanced, per listener map."""
        listing = RealNftOps(namespace).list_chain_json(dsr.TABLE, dsr.CHAIN)
        return dsr.new_flow_counts(listing or {})


def add_member(lab: Lab, suffix: str, host: int, vips: Iterable[str], network: str = "m0") -> str:
    """A DSR member of a lab with services: a namespace of its own (no lbaas agent) on
    member network ``network`` at host number ``host`` of it, default route via the router,
    the VIPs on ``lo`` with ARP off for them; the router made to accept replies from VIPs
    it routes elsewhere. What an operator does on a real backend (docs/operations.md).

    The namespace is ``<lab>-<suffix>``, recorded by the lab first (``down`` removes it,
    and its link into the member bridge with it). Returns the member's address.
    """
    state = lab.state()
    namespace = f"{lab.names.prefix}{suffix}"
    lab.add_namespace(namespace)
    netns = Netns(run_command)
    inner = n.inner_interface(network)
    port = f"{suffix[:8]}-{network}"
    netns.veth(namespace, inner, lab.names.fabric, port, bridge=n.bridge(network))
    netns.ip(namespace, "addr", "add", address(state.networks[network], host), "dev", inner)
    netns.ip(namespace, "link", "set", "lo", "up")
    gateway = bare(address(state.networks[network], ROUTER_HOST))
    netns.ip(namespace, "route", "add", "default", "via", gateway)
    dsr_lab = LabDsr(run_command)
    dsr_lab.member(namespace, vips, [inner])
    dsr_lab.router(lab.names.router)
    return bare(address(state.networks[network], host))
