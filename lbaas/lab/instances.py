"""Instances in the lab: a namespace with a port on a tenant network, on a chosen host.

A tenant network ``net`` (a name of the lab's) is a network of the control plane's
registry (id ``uuid5(lab/net)``) with one subnet, and on every host that has an instance
on it, a Linux bridge named as Neutron's Linux-bridge agent names it (``brq<id[:11]>``,
which the agent's metadata proxy joins too) with a VXLAN port over the fabric to every
other host. Tenant ranges may overlap: two networks can have the same CIDR and addresses.

The fabric never carries the metadata address or MAC (an nftables bridge table on every
host drops them at the VXLAN ports), as OVN never carries traffic to a ``localport`` off
its host: each instance reaches its own host's proxy only. An instance gets the route to
the metadata address that the port's network hands out: a host route, on link.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import uuid
from typing import Any

from lbaas.lab import processes
from lbaas.lab.addresses import FIRST_HOST, address, bare
from lbaas.lab.base import LabError
from lbaas.lab.lab import Lab
from lbaas.lab.netns import Netns
from lbaas.lab.services import API_PORT, SETTINGS_FILE, host_id, lbaas_command
from lbaas.metadata.haproxy_config import METADATA_ADDRESS, METADATA_MAC

_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
VXLAN_PORT = 4789
#: VXLAN's 50 bytes of headers come off the fabric's 1500.
TENANT_MTU = 1450
_LOCALPORT_TABLE = "lab_localport"


def tenant_network_id(lab: str, network: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"lbaas-lab:{lab}/tenant/{network}/network"))


def _tenant_subnet_id(lab: str, network: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"lbaas-lab:{lab}/tenant/{network}/subnet"))


def _bridge(network_id: str) -> str:
    return f"brq{network_id[:11]}"


def _vxlan(network_id: str) -> str:
    return f"vx{network_id[:11]}"


def _vni(network_id: str) -> int:
    return int(network_id.replace("-", "")[:6], 16) or 1


def _localport_rules() -> str:
    """Bridge rules keeping the metadata port on its host (at every ``vx…`` port)."""
    drops = [
        f"ether saddr {METADATA_MAC} drop",
        f"ether daddr {METADATA_MAC} drop",
        f"arp daddr ip {METADATA_ADDRESS} drop",
        f"arp saddr ip {METADATA_ADDRESS} drop",
        f"ip daddr {METADATA_ADDRESS} drop",
        f"ip saddr {METADATA_ADDRESS} drop",
    ]
    rules = [f'        {side} "vx*" {rule}' for side in ("iifname", "oifname") for rule in drops]
    return "\n".join(
        [
            f"table bridge {_LOCALPORT_TABLE} {{",
            "    chain forward {",
            "        type filter hook forward priority 0; policy accept;",
            *rules,
            "    }",
            "}",
            "",
        ]
    )


class Instances:
    def __init__(self, lab: Lab, netns: Netns) -> None:
        self._lab = lab
        self._netns = netns

    def add(
        self, host: str, network: str, ip: str, *, cidr: str | None = None, name: str | None = None
    ) -> dict[str, Any]:
        """Start an instance on ``host`` with a port at ``ip`` on tenant network
        ``network`` (registered with ``cidr``, default ``ip``'s /24, when new)."""
        state = self._lab.state()
        index = self._lab.host_index(host)
        if not _NAME.match(network):
            raise LabError(f"tenant network name {network!r}: 1-12 lowercase letters or digits")
        name = name or f"{network}-{ip.replace('.', '-')}"
        if not re.fullmatch(r"[a-z0-9-]{1,40}", name) or name in state.instances:
            raise LabError(f"instance name {name!r} is taken or not 1-40 of [a-z0-9-]")
        subnet = self._network(network, cidr or str(ipaddress.ip_network(f"{ip}/24", False)))
        network_id = tenant_network_id(state.name, network)
        self._host_network(index, network_id)
        instance_id = str(uuid.uuid4())
        port = self._create_port(network_id, ip, instance_id, host, name)
        namespace = self._plug(index, name, network_id, f"{ip}/{subnet.prefixlen}")
        record = {
            "name": name,
            "host": host,
            "network": network,
            "network_id": network_id,
            "address": ip,
            "instance_id": instance_id,
            "port_id": port["id"],
            "project_id": port["project_id"],
            "hostname": port["dns_name"] or name,
            "namespace": namespace,
        }
        state = self._lab.state()
        state.instances[name] = record
        self._lab.save(state)
        return record

    def remove(self, name: str) -> None:
        """Delete the instance's port through the API, then its namespace."""
        state = self._lab.state()
        record = state.instances.get(name)
        if record is None:
            raise LabError(f"no instance {name!r} in lab {state.name}")
        self._api("DELETE", f"/v2.0/ports/{record['port_id']}")
        self._lab.remove_namespace(record["namespace"])
        state = self._lab.state()
        state.instances.pop(name, None)
        self._lab.save(state)

    def _network(self, network: str, cidr: str) -> ipaddress.IPv4Network:
        state = self._lab.state()
        known = state.tenant_networks.get(network)
        if known is not None:
            return ipaddress.IPv4Network(known)
        net = ipaddress.IPv4Network(cidr, strict=False)
        control = self._lab.services_dir / "ctl" / SETTINGS_FILE
        argv = lbaas_command(control, "network", "create-subnet", str(net), "--name",
                             f"{state.name}-{network}", "--id", _tenant_subnet_id(state.name, network),
                             "--network-id", tenant_network_id(state.name, network),
                             "--mtu", str(TENANT_MTU))  # fmt: skip
        processes.run_to_end(self._lab.names.control, argv)
        state = self._lab.state()
        state.tenant_networks[network] = str(net)
        self._lab.save(state)
        return net

    def _host_network(self, index: int, network_id: str) -> None:
        """The network's bridge and VXLAN port on host ``index`` (once per host)."""
        state = self._lab.state()
        host_ns = self._lab.names.host(index)
        bridge, vxlan = _bridge(network_id), _vxlan(network_id)
        if vxlan in self._netns.ip(host_ns, "-o", "link", "show"):
            return
        local = bare(address(state.networks["fab"], FIRST_HOST + index))
        if bridge not in self._netns.ip(host_ns, "-o", "link", "show"):
            self._netns.bridge(host_ns, bridge)
        self._netns.ip(host_ns, "link", "add", vxlan, "type", "vxlan", "id",
                       str(_vni(network_id)), "local", local, "dstport", str(VXLAN_PORT),
                       "dev", "fab0")  # fmt: skip
        self._netns.ip(host_ns, "link", "set", vxlan, "master", bridge, "up")
        for other in range(1, state.hosts + 1):
            if other != index:
                peer = bare(address(state.networks["fab"], FIRST_HOST + other))
                self._netns.check(["bridge", "-n", host_ns, "fdb", "append",
                                   "00:00:00:00:00:00", "dev", vxlan, "dst", peer])  # fmt: skip
        self._netns.nft(host_ns, _localport_rules(), _LOCALPORT_TABLE)

    def _plug(self, index: int, name: str, network_id: str, cidr_address: str) -> str:
        namespace = f"{self._lab.names.host_prefix(index)}vm-{name}"
        self._lab.add_namespace(namespace)
        outer = "vi" + hashlib.sha256(namespace.encode()).hexdigest()[:10]
        host_ns = self._lab.names.host(index)
        self._netns.veth(namespace, "eth0", host_ns, outer, bridge=_bridge(network_id))
        self._netns.ip(namespace, "link", "set", "eth0", "mtu", str(TENANT_MTU))
        self._netns.ip(namespace, "addr", "add", cidr_address, "dev", "eth0")
        # The metadata route the network hands out: a host route on the port's link.
        self._netns.ip(namespace, "route", "add", f"{METADATA_ADDRESS}/32", "dev", "eth0")
        return namespace

    def _create_port(
        self, network_id: str, ip: str, instance_id: str, host: str, name: str
    ) -> dict[str, Any]:
        body = {
            "port": {
                "network_id": network_id,
                "name": name,
                "fixed_ips": [{"ip_address": ip}],
                "device_id": instance_id,
                "device_owner": "compute:nova",
                "binding:host_id": host_id(int(host[1:])),
                "dns_name": name,
            }
        }
        port: dict[str, Any] = self._api("POST", "/v2.0/ports", body)["port"]
        return port

    def _api(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        argv = ["curl", "-sS", "-X", method, "-H", "Content-Type: application/json",
                "-w", "\n%{http_code}", f"http://127.0.0.1:{API_PORT}{path}"]  # fmt: skip
        if body is not None:
            argv += ["-d", json.dumps(body)]
        done = self._netns.check(["ip", "netns", "exec", self._lab.names.control, *argv])
        text, _, code = done.rstrip("\n").rpartition("\n")
        if not code.startswith("2"):
            raise LabError(f"{method} {path}: {code} {text.strip()}")
        return json.loads(text) if text.strip() else {}
