"""DsrRouter with the real ``ip`` and ``nft``, as root, in this (or a named) namespace.

It remembers the members it installed a rule and a table for, so that a member gone from
every service loses them, and so that a member's rule is added once (``ip rule add`` twice
makes two rules). An agent that restarts finds rules of its predecessor: the first time it
sees a member it deletes that member's rule (failure is fine) before adding it.
"""

from __future__ import annotations

from collections.abc import Sequence

from lbaas.l4.host.base import DsrRouter
from lbaas.l4.host.real import NamespaceCommands, RealNftOps
from lbaas.l4.service import L4Service
from lbaas.tier import dsr


class RealDsrRouter(NamespaceCommands, DsrRouter):
    def __init__(self, namespace: str | None = None, *, ip_binary: str = "ip") -> None:
        self._prefix = [] if namespace is None else [ip_binary, "netns", "exec", namespace]
        self._ip = ip_binary
        self._nft = RealNftOps(namespace)
        self._members: set[str] = set()

    def apply(self, services: Sequence[L4Service]) -> None:
        wanted = set(dsr.member_addresses(services))
        if services:
            # The node forwards what it marks (a tier node forwards already; made sure).
            self._must(["sysctl", "-qw", "net.ipv4.ip_forward=1"])
        for member in sorted(wanted - self._members):
            self._must([self._ip, *dsr.route_command(member)])
            self._run([self._ip, *dsr.rule_command(member, "del")])
            self._must([self._ip, *dsr.rule_command(member, "add")])
            self._members.add(member)
        self._nft.load(dsr.render(services))
        for member in sorted(self._members - wanted):
            self._run([self._ip, *dsr.rule_command(member, "del")])
            self._run([self._ip, *dsr.flush_command(member)])
            self._members.discard(member)
