"""The kernel half of a netns amphora: its VIP filter and its UDP listeners (L4 engine).

HAProxy serves the TCP-family listeners; what a kernel does for the amphora is here: the
``vip_filter`` table (what the VIP leg lets in, the way out for translated flows, the UDP
counters) and the L4 engine's table for the UDP listeners, both in the amphora's
namespace. ``check`` validates the filter with ``nft -c`` before anything changes (the
manager calls it before HAProxy's own check is applied); ``apply`` loads it in one
transaction, then has the engine balance the UDP listeners (or drop their table).

Counters. nftables counters restart from zero when their table is replaced (a listener
added or removed, an agent that replays its spec), and they outlive the agent. So each
read adds only what grew since the previous one (a counter found lower restarted: all
of it is new), starting from the first read of this agent's life: a new agent life
reports what was counted since, as the HAProxy statistics do. Reads bracket every change,
so a replacement loses only what arrived between the two.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from lbaas.agent.host.base import HostOps
from lbaas.agent.vip_filter import FORWARD_CHAIN, TABLE, byte_counters, counter_names, render
from lbaas.agent.wire import AmphoraSpec
from lbaas.agent.wire_datapath import UdpListener
from lbaas.l4.engine import L4Engine
from lbaas.l4.host.base import NftOps
from lbaas.l4.service import HashKey, L4Listener, L4Member, L4Protocol, L4Service
from lbaas.model.graph import ListenerId, MemberId, PoolId
from lbaas.model.health import (
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)

_Reading = tuple[int, int, int]  # new flows, bytes in, bytes out


def l4_service(spec: AmphoraSpec) -> L4Service:
    """The L4 engine's input for the spec's UDP listeners."""
    return L4Service(
        lb_id=spec.loadbalancer_id,
        vip=spec.vip.address,
        listeners=tuple(_l4_listener(listener) for listener in spec.udp_listeners),
    )


def _l4_listener(listener: UdpListener) -> L4Listener:
    return L4Listener(
        protocol=L4Protocol.UDP,
        port=listener.port,
        members=tuple(L4Member(m.key, m.address, m.port, m.weight) for m in listener.members),
        hash_key=HashKey(listener.hash_key),
        table_size=listener.table_size,
        source_prefix=listener.source_prefix,
    )


@dataclass
class _Growth:
    """What counters grew by over this agent's life, read after read."""

    last: dict[int, _Reading] = field(default_factory=dict)
    total: dict[int, _Reading] = field(default_factory=dict)

    def observe(self, readings: dict[int, _Reading]) -> None:
        for port, now in readings.items():
            before = self.last.get(port)
            grown = (0, 0, 0) if before is None else _grown(before, now)
            total = self.total.get(port, (0, 0, 0))
            self.total[port] = (total[0] + grown[0], total[1] + grown[1], total[2] + grown[2])
            self.last[port] = now


def _grown(before: _Reading, now: _Reading) -> _Reading:
    # A counter lower than before was recreated with its table: everything it holds is new.
    restarted = any(n < b for n, b in zip(now, before, strict=True))
    if restarted:
        return now
    return (now[0] - before[0], now[1] - before[1], now[2] - before[2])


class AmphoraDatapath:
    """VIP filter and UDP listeners of one amphora namespace."""

    def __init__(self, host: HostOps, nft: NftOps, namespace: str) -> None:
        self._host = host
        self._nft = nft
        self._namespace = namespace
        self._engine = L4Engine(nft)
        self._growth = _Growth()
        self._lock = threading.Lock()
        self._engine_clean = False  # True once no UDP table can be left from before
        # What this object last loaded: the same again (a resync, a repeated PUT) is skipped.
        self._loaded: tuple[str, L4Service] | None = None

    def check(self, spec: AmphoraSpec, vip_device: str) -> str:
        """The filter ruleset for ``spec``, validated with ``nft -c``; changes nothing."""
        text = render(spec.vip.address, vip_device, spec.vip_filter, spec.udp_listeners)
        if self._loaded is None or self._loaded[0] != text:
            self._nft.check(text)
        return text

    def apply(self, spec: AmphoraSpec, checked_text: str) -> None:
        """Load the filter, then balance the UDP listeners (or remove their table).

        Nothing is done when the filter text and the UDP service are those loaded last by
        this object (its tables went with the namespace if that was deleted, and then the
        manager makes a new ``AmphoraDatapath``).
        """
        service = l4_service(spec)
        if self._loaded == (checked_text, service):
            return
        with self._lock:
            self._growth.observe(self._read(spec))
            self._host.set_forwarding(self._namespace, bool(spec.udp_listeners))
            self._nft.load(checked_text)
            if spec.udp_listeners:
                self._engine.apply(service)
                self._engine_clean = False
            elif not self._engine_clean:
                self._engine.remove(spec.loadbalancer_id)
                self._engine_clean = True
            self._growth.observe(self._read(spec))
            self._loaded = (checked_text, service)

    def health(
        self, spec: AmphoraSpec
    ) -> tuple[dict[ListenerId, ListenerHealth], dict[PoolId, PoolHealth]]:
        """Each UDP listener with its counters, each UDP pool with unchecked members.

        ``active_connections`` is the number of the listener's conntrack entries: its flows
        still alive (a UDP entry lives 30 s after its last packet, 120 s once answered
        both ways).

        No health checker runs for UDP members yet: every member the spec lists is
        balanced and reported NO_CHECK (NO_MONITOR in the API).
        """
        with self._lock:
            self._growth.observe(self._read(spec))
            totals = dict(self._growth.total)
        listeners: dict[ListenerId, ListenerHealth] = {}
        pools: dict[PoolId, PoolHealth] = {}
        for listener in spec.udp_listeners:
            flows, bytes_in, bytes_out = totals.get(listener.port, (0, 0, 0))
            live = self._nft.count_flows(L4Protocol.UDP, spec.vip.address, listener.port)
            counters = ListenerCounters(
                bytes_in=bytes_in,
                bytes_out=bytes_out,
                active_connections=live,
                total_connections=flows,
            )
            listeners[ListenerId(listener.listener_id)] = ListenerHealth(
                ListenerState.OPEN, counters
            )
            if listener.pool_id is not None:
                members = {MemberId(m.key): MemberState.NO_CHECK for m in listener.members}
                state = PoolState.UP if members else PoolState.DOWN
                pools[PoolId(listener.pool_id)] = PoolHealth(state, members)
        return listeners, pools

    def _read(self, spec: AmphoraSpec) -> dict[int, _Reading]:
        flows = self._engine.new_flows(spec.loadbalancer_id)
        listing = self._nft.list_chain_json(TABLE, FORWARD_CHAIN)
        volumes = byte_counters(listing) if listing is not None else {}
        readings: dict[int, _Reading] = {}
        for name, count in flows.items():
            protocol, _, port_text = name.partition("_")
            if protocol != L4Protocol.UDP.value or not port_text.isdigit():
                continue
            port = int(port_text)
            inbound, outbound = counter_names(port)
            readings[port] = (count, volumes.get(inbound, 0), volumes.get(outbound, 0))
        return readings
