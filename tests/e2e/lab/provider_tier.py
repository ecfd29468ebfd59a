"""A lab whose tier serves a distributed load balancer made through the API, in one return mode.

``build`` (of what ``prepare`` named) runs ``lbaas lab up --hosts 3 --tier 3 --tier-return MODE`` (root), creates the
load balancer (provider ``distributed``, one TCP listener on PORT, SOURCE_IP_PORT) with two
members that are namespaces of their own on ``m0`` (``lbaas.lab.tier_dsr.add_member``: the
VIP on ``lo`` with ARP off, as DSR needs; harmless in NAT return), each running the
greeting backend of ``tests/e2e/l4/l4_peers.py`` on PORT, and waits until the router routes
the VIP to h1-h3. Used by ``test_lab_tier_dsr.py`` and ``bench/l4_tier_provider.py``; the
caller runs ``lab_cli("down", ...)`` and kills the servers, even when ``build`` failed.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lab_api import V2, LabApi, lab_api_when_up

from lbaas.host.commands import run_command
from lbaas.l4.engine import L4Engine
from lbaas.l4.host.real import RealNftOps
from lbaas.lab.addresses import FIRST_HOST
from lbaas.lab.lab import Lab
from lbaas.lab.tier import LabTier
from lbaas.lab.tier_dsr import LabDsr, add_member

E2E = Path(__file__).resolve().parents[1]
PEERS = str(E2E / "l4" / "l4_peers.py")
HOLD = str(E2E / "tier" / "tier_hold.py")
NODES = (1, 2, 3)
PORT = 80
#: Host numbers of the two members on the member network (the hosts are FIRST_HOST + i).
MEMBERS = {"dsr1": FIRST_HOST + 40, "dsr2": FIRST_HOST + 41}
COUNTERS = "t2dsrcount"


def lab_cli(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "lbaas.cli", "lab", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@contextlib.contextmanager
def lab_up(lab_dir: Path, prefix: str, *up: str) -> Iterator[tuple[Lab, list[str]]]:
    """``lbaas lab up <up>`` under a fresh name; the lab and its ``--name``/``--state-dir``
    arguments; ``lbaas lab down`` afterwards, also when the test failed."""
    base = ["--name", f"{prefix}{uuid.uuid4().hex[:7]}", "--state-dir", str(lab_dir)]
    try:
        lab_cli("up", *up, "--quiet", *base)
        yield Lab(base[1], lab_dir), base
    finally:
        lab_cli("down", *base)


@dataclass
class ProviderTier:
    lab: Lab
    base: list[str]  # --name, --state-dir for lab_cli
    mode: str
    api: LabApi | None = None
    lb_id: str = ""
    vip: str = ""
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def tier(self) -> LabTier:
        return LabTier(self.lab, NODES)

    def host(self, index: int) -> str:
        return self.lab.names.host(index)

    def flows(self, index: int) -> int:
        """New TCP flows node ``index`` balanced for the VIP (DSR table or L4 engine)."""
        if self.mode == "dsr":
            return sum(LabDsr(run_command).new_flows(self.host(index)).values())
        return L4Engine(RealNftOps(self.host(index))).new_flows(self.lb_id).get("tcp_80", 0)


def prepare(
    lab_dir: Path, mode: str, servers: list[subprocess.Popen[bytes]], prefix: str = "r"
) -> ProviderTier:
    """Names only (nothing runs yet); the backends ``build`` starts go into ``servers``."""
    name = f"{prefix}{uuid.uuid4().hex[:7]}"
    base = ["--name", name, "--state-dir", str(lab_dir)]
    return ProviderTier(Lab(name, lab_dir), base, mode, servers=servers)


def _flavor(api: LabApi, data: dict[str, str]) -> str:
    """An enabled flavor of the distributed provider with ``data``; its id."""
    profile = {"name": "edge", "provider_name": "distributed", "flavor_data": json.dumps(data)}
    made = api.call("POST", f"{V2}/flavorprofiles", {"flavorprofile": profile})["flavorprofile"]
    flavor = {"name": "edge", "flavor_profile_id": made["id"], "enabled": True}
    return str(api.call("POST", f"{V2}/flavors", {"flavor": flavor})["flavor"]["id"])


def build(built: ProviderTier) -> None:
    """The lab and load balancer above; the caller runs ``down`` whatever happens.

    The lab's deployment answers in NAT (``tier.return_mode``); a DSR load balancer asks
    for DSR, and for the lab's one group, through its flavor (``tier_return_mode``,
    ``tier_group``), as a tenant of a deployment offering both would.
    """
    lab_cli("up", "--hosts", "3", "--tier", "3", "--quiet", *built.base)
    services, api = lab_api_when_up(built.lab, 3)
    built.api = api
    body = {"name": "edge", "vip_subnet_id": services["vip_subnet_id"], "provider": "distributed"}
    if built.mode == "dsr":
        body["flavor_id"] = _flavor(api, {"tier_return_mode": "dsr", "tier_group": "g0"})
    created = api.call("POST", f"{V2}/loadbalancers", {"loadbalancer": body})["loadbalancer"]
    built.lb_id, built.vip = str(created["id"]), str(created["vip_address"])
    api.wait_active(built.lb_id)
    addresses = []
    for suffix, host in MEMBERS.items():
        addresses.append(add_member(built.lab, suffix, host, [built.vip]))
        server = [sys.executable, PEERS, "server", suffix, "0.0.0.0", str(PORT)]
        namespace = f"{built.lab.names.prefix}{suffix}"
        built.servers.append(subprocess.Popen(["ip", "netns", "exec", namespace, *server]))
    lb_id = built.lb_id
    listener = api.create(
        lb_id, "listeners", {"loadbalancer_id": lb_id, "protocol": "TCP", "protocol_port": PORT}
    )
    pool = api.create(
        lb_id,
        "pools",
        {"listener_id": listener, "protocol": "TCP", "lb_algorithm": "SOURCE_IP_PORT"},
    )
    subnet = services["member_subnet_ids"]["m0"]
    for address in addresses:
        member = {"address": address, "protocol_port": PORT, "subnet_id": subnet}
        api.create(lb_id, f"pools/{pool}/members", member)
    built.tier.wait_next_hops(built.vip, set(NODES), 60)


def count_forwarded(namespace: str, vip: str, interface: str | None = None) -> None:
    """A table of two forward counters in ``namespace``: packets to ``vip`` and from it."""
    only = f'iifname "{interface}" ' if interface else ""
    RealNftOps(namespace).load(
        f"table ip {COUNTERS} {{\n"
        "  chain forward {\n"
        "    type filter hook forward priority 0; policy accept;\n"
        f'    ip daddr {vip} tcp dport {PORT} counter comment "to"\n'
        f'    {only}ip saddr {vip} tcp sport {PORT} counter comment "from"\n'
        "  }\n"
        "}\n"
    )


def forwarded(namespace: str) -> dict[str, int]:
    listing = RealNftOps(namespace).list_chain_json(COUNTERS, "forward") or {}
    counts: dict[str, int] = {}
    for item in listing.get("nftables", []):
        rule = item.get("rule")
        for expression in rule.get("expr", []) if rule else []:
            if "counter" in expression:
                counts[rule["comment"]] = int(expression["counter"]["packets"])
    return counts


def hold(namespace: str, vip: str, count: int) -> subprocess.Popen[str]:
    """``count`` connections to ``vip`` established (each greeted by its member)."""
    process = subprocess.Popen(
        ["ip", "netns", "exec", namespace, sys.executable, HOLD, vip, str(PORT), str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def answers(process: subprocess.Popen[str]) -> int:
    """How many of a ``hold``'s connections answer now."""
    out, _ = process.communicate("go\n", timeout=60)
    return int(json.loads(out.strip().splitlines()[-1])["survived"])
