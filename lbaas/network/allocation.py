"""VIP address allocation from the subnets lbaas knows, the way Octavia resolves a VIP.

A load balancer's VIP may be requested by port, network, subnet and/or address; this module
picks the subnet, checks the address (or finds a free one) and records a port for it, all
inside the caller's transaction so a failed create leaves no port behind. The network and
broadcast addresses, the gateway and (for the loopback range) 127.0.0.1 are never handed out.
"""

from __future__ import annotations

import ipaddress
import random
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime

from lbaas.db.network import network_repo
from lbaas.db.session import Session
from lbaas.db.tables import PortRow, SubnetRow
from lbaas.errors import Conflict, InvalidInput, ValidationFailure
from lbaas.model.graph import NetworkId, SubnetId, Vip

# Larger subnets are only searched this far for a free address (keeps allocation O(1)).
_SEARCH_LIMIT = 65536


@dataclass(frozen=True)
class VipRequest:
    port_id: str | None = None
    network_id: str | None = None
    subnet_id: str | None = None
    address: str | None = None


def _contains(subnet: SubnetRow, address: str) -> bool:
    return ipaddress.ip_address(address) in ipaddress.ip_network(subnet.cidr, strict=False)


# Where the last search on each subnet ended, so the next one starts there instead of
# reading every used address again (that made each create O(addresses in use)). Only a
# speed-up: a stale or missing hint just means a longer search, and the unique
# (subnet, address) constraint still decides who gets an address.
_next_index: dict[str, int] = {}
# Addresses this process handed out in the last _PENDING_SECONDS, per subnet: a concurrent
# create in this process does not see them in the table until their transaction commits,
# and one that chose the same address would wait in its INSERT for that whole transaction
# and then try again (88 ms per port INSERT on average, some 40 % retried, with 50 clients
# creating load balancers: docs/architecture.md, "Scale"). Only a preference: when every
# free address is pending, a pending one is still given (the constraint decides).
_pending: dict[str, dict[str, float]] = {}
_PENDING_SECONDS = 30.0
_hints = threading.Lock()
# Right after the hint an address is nearly always free: look at a few first, then more.
_FIRST_BATCH = 8
_BATCH = 64
# On a subnet this large each process starts its search at a random place, and moves to
# another after losing an address to another process: API processes that all began at the
# first address walked it in step and kept choosing the same ones, each loser waiting for
# the winner's transaction, some creates failing after 16 tries (three control hosts, 50
# clients: docs/benchmarks.md, "Scale in the lab"). Smaller subnets keep their order.
_SCATTER_FROM = 4000  # a /20 or larger
_scatter = random.Random()


def _host_range(network: ipaddress.IPv4Network | ipaddress.IPv6Network) -> tuple[int, int]:
    """(first usable address as an integer, how many) — as ``hosts()`` would yield."""
    base, size = int(network.network_address), network.num_addresses
    if network.version == 4 and network.prefixlen < 31:
        return base + 1, size - 2  # no network or broadcast address
    if network.version == 6 and network.prefixlen < 127:
        return base + 1, size - 1  # no subnet-router anycast address
    return base, size


def _free_address(session: Session, subnet: SubnetRow, claim: bool = True) -> str | None:
    """A free address, searching in batches from where the last search ended; ``claim``:
    it is about to be reserved (pending for the other creates of this process)."""
    first, count = _host_range(ipaddress.ip_network(subnet.cidr, strict=False))
    count = min(count, _SEARCH_LIMIT)
    reserved = {subnet.gateway_ip, "127.0.0.1"}
    if subnet.id not in _next_index and count >= _SCATTER_FROM:
        _move_hint(subnet.id, count)
    start = _next_index.get(subnet.id, 0) % max(count, 1)
    offset, batch = 0, _FIRST_BATCH
    fallback: tuple[int, str] | None = None  # free in the table, pending here
    while offset < count:
        size = min(batch, count - offset)
        indexes = [(start + offset + k) % count for k in range(size)]
        candidates = [str(ipaddress.ip_address(first + i)) for i in indexes]
        taken = network_repo.taken_addresses(session, subnet.id, candidates)
        for index, text in zip(indexes, candidates, strict=True):
            if text in taken or text in reserved:
                continue
            if not claim or _take(subnet.id, index, text, count):
                return text
            fallback = fallback or (index, text)
        offset, batch = offset + size, _BATCH
    if fallback is None:
        return None
    _take(subnet.id, *fallback, count, force=True)
    return fallback[1]


def _take(subnet_id: str, index: int, text: str, count: int, force: bool = False) -> bool:
    """Mark ``text`` pending and move the hint past it, unless another create of this
    process took it in the last _PENDING_SECONDS (``force``: take it all the same).
    ``count``: the addresses searched, the index's modulus."""
    now = time.monotonic()
    with _hints:
        pending = _pending.setdefault(subnet_id, {})
        if not force and now - pending.get(text, -_PENDING_SECONDS) < _PENDING_SECONDS:
            return False
        if len(pending) >= 256:  # forget the expired ones now and then
            for old in [a for a, at in pending.items() if now - at >= _PENDING_SECONDS]:
                del pending[old]
        pending[text] = now
        hint = _next_index.get(subnet_id, 0)
        # Never back over another thread's pick, but follow the search round the end.
        if index + 1 > hint or hint - index > count // 2:
            _next_index[subnet_id] = index + 1
        return True


def _move_hint(subnet_id: str, count: int) -> None:
    """Start this process's next search on the subnet at a random place."""
    with _hints:
        _next_index[subnet_id] = _scatter.randrange(count)


def free_address(session: Session, subnet: SubnetRow) -> str | None:
    """A free address on the subnet (for ports created through the Networking API)."""
    return _free_address(session, subnet)


def contains(subnet: SubnetRow, address: str) -> bool:
    return _contains(subnet, address)


def _subnet_for_network(session: Session, network_id: str, address: str | None) -> SubnetRow:
    subnets = network_repo.subnets_of_network(session, network_id)
    if address is not None:
        for subnet in subnets:
            if _contains(subnet, address):
                return subnet
        raise ValidationFailure(
            "Supplied network does not contain a subnet for VIP address specified."
        )
    for subnet in sorted(subnets, key=lambda s: s.ip_version):
        if _free_address(session, subnet, claim=False) is not None:
            return subnet
    raise ValidationFailure(f"No subnet of network {network_id} has a free address for the VIP.")


_VIP_OWNER = "lbaas:vip"


def allocate_vip(session: Session, request: VipRequest, owner_id: str, now: datetime) -> Vip:
    """Resolve and reserve the VIP; raises InvalidInput (400) or Conflict (409)."""
    if request.port_id is not None:
        return _claim_port(session, request, request.port_id, owner_id)
    subnet = _requested_subnet(session, request)
    if request.address is not None:
        if not _contains(subnet, request.address):
            raise InvalidInput(
                f"VIP address {request.address} is not in the CIDR {subnet.cidr} of subnet "
                f"{subnet.id}."
            )
        if network_repo.ports_on(session, subnet.id, request.address) is not None:
            raise Conflict(f"The VIP IP address is already in use: {request.address}")
    return _reserve_port(session, subnet, request.address, owner_id, now)


def _claim_port(session: Session, request: VipRequest, port_id: str, owner_id: str) -> Vip:
    """The VIP is an existing port: check it fits the request and take it for ``owner_id``."""
    port = network_repo.get_port(session, port_id)
    if port is None:
        raise InvalidInput(f"Port {port_id} not found.")
    if port.device_id and port.device_id != owner_id:
        raise InvalidInput(f"Port {port.id} is already used by device {port.device_id}")
    if request.address is not None and request.address != port.ip_address:
        raise InvalidInput("Specified VIP address not found on the specified VIP port.")
    if request.subnet_id is not None and request.subnet_id != port.subnet_id:
        raise InvalidInput(
            "VIP port's subnet could not be determined. Please specify either a VIP "
            "subnet or address."
        )
    port.device_id = owner_id
    port.device_owner = _VIP_OWNER
    return Vip(port.ip_address, SubnetId(port.subnet_id), NetworkId(port.network_id), port.id)


def _requested_subnet(session: Session, request: VipRequest) -> SubnetRow:
    """The subnet named by the request, or the one its network offers for the address."""
    if request.subnet_id is not None:
        subnet = network_repo.get_subnet(session, request.subnet_id)
        if subnet is None:
            raise InvalidInput(f"Subnet {request.subnet_id} not found.")
        if request.network_id is not None and subnet.network_id != request.network_id:
            raise InvalidInput(f"Subnet {request.subnet_id} not found.")
        return subnet
    if request.network_id is not None:
        if network_repo.get_network(session, request.network_id) is None:
            raise InvalidInput(f"Network {request.network_id} not found.")
        return _subnet_for_network(session, request.network_id, request.address)
    raise ValidationFailure("VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.")


def _reserve_port(
    session: Session, subnet: SubnetRow, address: str | None, owner_id: str, now: datetime
) -> Vip:
    """Insert the VIP port on ``subnet`` at ``address`` (or a free one)."""
    # Another transaction may take the same free address between our read and our insert;
    # the unique (subnet, address) constraint tells us, and we try the next one.
    for _attempt in range(16):
        chosen = address or _free_address(session, subnet)
        if chosen is None:
            raise Conflict(f"No free address left on subnet {subnet.id}.")
        port_id = str(uuid.uuid4())
        port = PortRow(
            id=port_id,
            network_id=subnet.network_id,
            subnet_id=subnet.id,
            ip_address=chosen,
            device_owner=_VIP_OWNER,
            device_id=owner_id,
            created_at=now,
        )
        if network_repo.try_reserve_port(session, port):
            return Vip(chosen, SubnetId(subnet.id), NetworkId(subnet.network_id), port_id)
        if address is not None:
            break
        _, count = _host_range(ipaddress.ip_network(subnet.cidr, strict=False))
        if count >= _SCATTER_FROM:  # another process searches here: search elsewhere
            _move_hint(subnet.id, min(count, _SEARCH_LIMIT))
    raise Conflict(f"The VIP IP address is already in use: {address or subnet.cidr}")
