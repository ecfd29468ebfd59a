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

Health. The UDP pools' monitors run in ``UdpMemberHealth`` (``udp_health``), from inside
the amphora's namespace; a member it finds down stays in the engine's input with
``healthy=False`` (its slots go to the others, every other slot stays), and each batch of
changes re-applies the engine with the last spec under the same lock as ``apply``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from lbaas.amphora.udp_health import CheckerFactory, UdpMemberHealth, namespace_checker
from lbaas.amphora.vip_filter import FORWARD_CHAIN, TABLE, byte_counters, counter_names, render
from lbaas.host.base import HostOps
from lbaas.l4.engine import L4Engine
from lbaas.l4.health.monitor import HealthChange
from lbaas.l4.host.base import NftOps
from lbaas.l4.service import (
    HashKey,
    L4Listener,
    L4Member,
    L4Protocol,
    L4Service,
    LiveFlowPolicy,
)
from lbaas.model.graph import ListenerId, MemberId, PoolId
from lbaas.model.health import (
    ListenerCounters,
    ListenerHealth,
    ListenerState,
    MemberState,
    PoolHealth,
    PoolState,
)
from lbaas.wire.amphora import AmphoraSpec
from lbaas.wire.datapath import UdpListener

log = logging.getLogger(__name__)

_Reading = tuple[int, int, int]  # new flows, bytes in, bytes out


def l4_service(spec: AmphoraSpec, healthy: dict[str, bool] | None = None) -> L4Service:
    """The L4 engine's input for the spec's UDP listeners, members marked with ``healthy``
    (a member it does not name is healthy: unchecked, or not probed yet)."""
    return udp_service(spec.loadbalancer_id, spec.vip.address, spec.udp_listeners, healthy)


def udp_service(
    lb_id: str,
    vip: str,
    listeners: tuple[UdpListener, ...],
    healthy: dict[str, bool] | None = None,
) -> L4Service:
    """``l4_service`` of the UDP listeners of ``lb_id`` on ``vip``."""
    health = healthy or {}
    return L4Service(lb_id, vip, tuple(_l4_listener(li, health) for li in listeners))


def _l4_listener(listener: UdpListener, healthy: dict[str, bool]) -> L4Listener:
    return L4Listener(
        protocol=L4Protocol.UDP,
        port=listener.port,
        members=tuple(
            L4Member(m.key, m.address, m.port, m.weight, healthy.get(m.key, True), m.backup)
            for m in listener.members
        ),
        hash_key=HashKey(listener.hash_key),
        table_size=listener.table_size,
        source_prefix=listener.source_prefix,
        live_flows=LiveFlowPolicy(listener.member_down),
        connection_limit=listener.connection_limit,
        idle_timeout=listener.idle_timeout,
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
    """Each counter's growth. A counter lower than before was recreated with its table:
    everything it holds is new. Judged per counter: the flow count lives in the engine's
    table, which a member change only updates, the byte counts in the filter table, which
    every PUT reloads (judging them together counted a member change's flows again)."""
    flows, bytes_in, bytes_out = (n if n < b else n - b for n, b in zip(now, before, strict=True))
    return flows, bytes_in, bytes_out


class AmphoraDatapath:
    """VIP filter and UDP listeners of one amphora namespace."""

    def __init__(
        self,
        host: HostOps,
        nft: NftOps,
        namespace: str,
        make_checker: CheckerFactory | None = None,
    ) -> None:
        self._host = host
        self._nft = nft
        self._namespace = namespace
        self._engine = L4Engine(nft)
        self._growth = _Growth()
        self._lock = threading.Lock()
        self._engine_clean = False  # True once no UDP table can be left from before
        # What this object last loaded: the same again (a resync, a repeated PUT) is skipped.
        self._loaded: tuple[str, L4Service] | None = None
        self._spec: AmphoraSpec | None = None  # the last applied, for health batches
        # The health the engine's table was last built with: what the heartbeat reports,
        # so a member shows ERROR only once it gets no new flows.
        self._applied_health: dict[str, bool] = {}
        self._health = UdpMemberHealth(
            make_checker or namespace_checker(namespace), self._on_health_changes
        )

    def check(self, spec: AmphoraSpec, vip_device: str) -> str:
        """The filter ruleset for ``spec``, validated with ``nft -c``; changes nothing."""
        own = None if spec.vrrp is None else spec.vrrp.own_address
        text = render(spec.vip.address, vip_device, spec.vip_filter, spec.udp_listeners, own)
        if self._loaded is None or self._loaded[0] != text:
            self._nft.check(text)
        return text

    def apply(self, spec: AmphoraSpec, checked_text: str) -> None:
        """Load the filter, then balance the UDP listeners (or remove their table).

        Nothing is done when the filter text and the UDP service are those loaded last by
        this object (its tables went with the namespace if that was deleted, and then the
        manager makes a new ``AmphoraDatapath``).
        """
        # Outside the lock: stopping a checker waits for a batch that may need the lock.
        self._health.update(spec.udp_listeners)
        with self._lock:
            healthy = self._health.healthy()
            service = l4_service(spec, healthy)
            self._spec = spec
            if self._loaded == (checked_text, service):
                self._applied_health = healthy  # the table loaded is already this one
                return
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
            self._applied_health = healthy

    def resume(self, spec: AmphoraSpec) -> None:
        """Check ``spec``'s UDP members again after an agent restart; the tables stay as
        the old agent left them until the first change (a health batch or a PUT)."""
        self._health.update(spec.udp_listeners)
        with self._lock:
            self._spec = spec
            self._applied_health = self._health.healthy()

    def close(self) -> None:
        """Stop the UDP members' health checks (the amphora or its namespace is gone)."""
        self._health.close()

    def _on_health_changes(self, changes: list[HealthChange]) -> None:
        """The checker's batch: balance the UDP listeners again with the new health."""
        with self._lock:
            spec, loaded = self._spec, self._loaded
            if spec is None or not spec.udp_listeners:
                return
            healthy = self._health.healthy()
            service = l4_service(spec, healthy)
            if loaded is not None and service == loaded[1]:
                self._applied_health = healthy
                return
            self._growth.observe(self._read(spec))
            self._engine.apply(service)
            self._engine_clean = False
            self._applied_health = healthy
            self._growth.observe(self._read(spec))
            if loaded is not None:
                self._loaded = (loaded[0], service)
        log.info(
            "UDP members of %s: %s",
            spec.loadbalancer_id,
            ", ".join(f"{c.key} {'up' if c.healthy else 'down'}" for c in changes),
        )

    def health(
        self, spec: AmphoraSpec
    ) -> tuple[dict[ListenerId, ListenerHealth], dict[PoolId, PoolHealth]]:
        """Each UDP listener with its counters, each UDP pool with its members' health.

        ``active_connections`` is the number of the listener's conntrack entries: its flows
        still alive (a UDP entry lives 30 s after its last packet, 120 s once answered
        both ways).

        Members of a pool with a monitor are UP or DOWN as the engine's table was last
        built (ONLINE or ERROR in the API: ERROR once the member gets no new flows, not
        before), the others NO_CHECK (NO_MONITOR).
        """
        with self._lock:
            self._growth.observe(self._read(spec))
            totals = dict(self._growth.total)
            applied_health = dict(self._applied_health)
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
                checked = self._health.member_states(listener, applied_health)
                members = {MemberId(key): state for key, state in checked.items()}
                alive = any(state is not MemberState.DOWN for state in members.values())
                state = PoolState.UP if alive else PoolState.DOWN
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
