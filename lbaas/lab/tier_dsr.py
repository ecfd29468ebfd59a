"""Direct server return in a lab tier: nodes mark and route, members hold the VIP on ``lo``.

What ``lbaas.l4.tier.dsr`` renders, run in the lab's namespaces:

- a node loads the DSR table and, per member address, a routing table (id = the member's
  mark) whose default route goes via the member on the member network, and an ``ip rule``
  sending that mark to it;
- a member gets the VIP on ``lo`` and the ARP/``rp_filter`` settings that keep it from
  answering ARP for the VIP while accepting packets for it;
- the router accepts replies whose source is a VIP it routes to the nodes (loose
  ``rp_filter``): in DSR they come from the members, by another interface.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from lbaas.l4.host.real import RealNftOps
from lbaas.l4.service import L4Service
from lbaas.l4.tier import dsr
from lbaas.lab.base import Runner
from lbaas.lab.netns import Netns


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
