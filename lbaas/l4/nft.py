"""nftables text for the L4 engine: one shared table, a chain and maps per load balancer.

Layout of ``table ip lbaas`` (one per network namespace)::

    map dispatch   { type ipv4_addr . inet_proto . inet_service : verdict;
                     elements = { VIP . tcp . 80 : jump lb_<key>, ... } }
    set entry_vips { type ipv4_addr; elements = { VIP of each entry load balancer } }
    chain prerouting  (nat, dstnat)   ip daddr . meta l4proto . th dport vmap @dispatch
    chain output      (nat, -100)     the same, for traffic from this namespace itself
    chain postrouting (nat, srcnat)   ct status dnat ct original ip daddr @entry_vips
                                      fib saddr type != local masquerade
    map m_<key>_tcp_80 { typeof numgen inc mod M : ip daddr . th dport; elements = { slot : member } }
    set a_<key>_tcp_80 { type ipv4_addr; flags interval; elements = { 10.1.0.0/16, ... } }
    ct timeout t_<key>_udp_53 { protocol udp; l3proto ip; policy = { unreplied: T, replied: T } }
    chain lb_<key> { ip daddr VIP meta l4proto tcp th dport 80 ip saddr != @a_<key>_tcp_80 drop
                     ip daddr VIP meta l4proto tcp th dport 80 ct count over N drop
                     ip daddr VIP meta l4proto udp th dport 53 ct timeout set "t_<key>_udp_53"
                     ip daddr VIP meta l4proto tcp th dport 80 counter
                     dnat ip to jhash <key> mod M seed S map @m_<key>_tcp_80
                     comment "tcp_80 <digest>" }  (every rule: rule_comments)

``<key>`` is the first 12 hex digits of the load balancer id. A new flow's first packet
does one lookup in ``dispatch`` (a hash of VIP, protocol and port), whatever the number of
load balancers, and jumps to its load balancer's chain; conntrack handles the rest of the
flow. Issue 34 measured why not a table per load balancer, as before: every table hooked
its own base chains, so the kernel walked every load balancer's chains for each new flow,
and refused the 1,025th base chain on a hook (``Argument list too long``): a node could not
hold more than about a thousand distributed load balancers.

One map lookup per new flow picks the member, whatever the number of members: a data map
of slot -> address . port needs no chain per member. ``jhash`` takes an explicit seed
derived from the load balancer and listener, so every node sends a given flow to the same
slot.

``a_<key>_<listener>`` exists only for a listener with ``allowed_cidrs``: one interval set
whatever the number of networks (one lookup, not a rule per network), checked before the
Maglev decision, so another source's flow is dropped before it is balanced. The NAT chains
see a flow's first packet only, so a change of the set decides new flows and leaves
established ones alone (conntrack holds them).

A listener's ``connection_limit`` is a ``ct count`` of its own (the kernel keeps the list of
the flows that passed the rule and drops their entries as conntrack forgets them): a new
flow past the limit is dropped before it is balanced, so a TCP client retries its SYN as
it would against a full HAProxy backlog. The count starts from zero when the chain is
rewritten (as a reloaded HAProxy counts only its own connections). A UDP listener's idle
timeout is a conntrack timeout policy (``ct timeout``) attached to each new flow's entry
before it is confirmed, for both of UDP's states.

A full load rewrites one load balancer in one transaction: the shared part declared (every
statement idempotent), its chain flushed and refilled, each map, set and timeout declared,
deleted and defined again (the idiom that works whether or not it exists, whatever its old
definition), what it held before and holds no more removed (``Footprint``), its dispatch
elements added. A VIP, protocol and port another load balancer of the namespace holds
already is refused by the kernel ("File exists"): one of them would never see a flow. A
load balancer the table does not hold yet is added by ``render_new`` instead: the same
objects, only declared (``nft`` then reads just the tables first, not every chain and
set). A slot update deletes and re-adds just the moved elements, and a change of allowed networks
just the networks that changed, in the same transaction, so no packet sees a half-written
map or set. A slot update and a removal are also described as data (``nft_steps``), which
``LibNftOps`` sends without nftables' parser and the reading of every chain and set it
does first.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lbaas.l4.maglev import MaglevTable
from lbaas.l4.service import HashKey, L4Listener, L4Member, L4Service

TABLE = "lbaas"
#: The table of one load balancer before the shared table (removed when it is next loaded).
LEGACY_PREFIX = "lbaas_"
_HASH_INPUT = {
    HashKey.FIVE_TUPLE: "ip saddr . th sport . ip daddr . th dport",
    HashKey.SOURCE_ADDRESS: "ip saddr",
}
#: Each element counts the packets it dispatched: the NAT chains see a flow's first packet
#: only, so that is the flows each listener received (read without listing the maps).
DISPATCH_BODY = "type ipv4_addr . inet_proto . inet_service : verdict; counter;"
#: A definition each kind of object can be declared with before it is deleted, whatever
#: it was (the kernel keeps an existing object as it is on a declaration).
_DECLARATIONS = {
    "map": "typeof numgen inc mod 2 : ip daddr . th dport;",
    "set": "type ipv4_addr; flags interval;",
    "ct timeout": "protocol udp; l3proto ip; policy = { unreplied: 1, replied: 1 };",
}


def lb_key(lb_id: str) -> str:
    """The first 12 hex digits of the load balancer id: its names' part in the table."""
    return lb_id.replace("-", "")[:12]


def chain_name(lb_id: str) -> str:
    return f"lb_{lb_key(lb_id)}"


def map_name(lb_id: str, listener_name: str) -> str:
    """The slot map of one listener (``m_<key>_tcp_80``)."""
    return f"m_{lb_key(lb_id)}_{listener_name}"


def allow_set_name(lb_id: str, listener: L4Listener) -> str:
    """The interval set of the sources a listener admits (``a_<key>_tcp_80``)."""
    return f"a_{lb_key(lb_id)}_{listener.name}"


def timeout_name(lb_id: str, listener: L4Listener) -> str:
    return f"t_{lb_key(lb_id)}_{listener.name}"


@dataclass(frozen=True)
class Footprint:
    """What one load balancer holds in the shared table besides its chain: its dispatch
    keys (``VIP . tcp . 80``), its VIP in ``entry_vips`` if it is the entry, and its maps,
    sets and timeouts as (kind, name)."""

    dispatch: frozenset[str] = frozenset()
    entry_vips: frozenset[str] = frozenset()
    objects: frozenset[tuple[str, str]] = frozenset()


def footprint(service: L4Service) -> Footprint:
    objects: set[tuple[str, str]] = set()
    for listener in service.listeners:
        objects.add(("map", map_name(service.lb_id, listener.name)))
        if listener.allowed_cidrs:
            objects.add(("set", allow_set_name(service.lb_id, listener)))
        if listener.idle_timeout is not None:
            objects.add(("ct timeout", timeout_name(service.lb_id, listener)))
    return Footprint(
        dispatch=frozenset(_dispatch_key(service, listener) for listener in service.listeners),
        entry_vips=frozenset({service.vip}) if service.entry else frozenset(),
        objects=frozenset(objects),
    )


def _dispatch_key(service: L4Service, listener: L4Listener) -> str:
    return f"{service.vip} . {listener.protocol.value} . {listener.port}"


def hash_seed(lb_id: str, listener: L4Listener) -> int:
    """A 32-bit jhash seed that is the same on every node for this listener."""
    digest = hashlib.blake2b(f"{lb_id}/{listener.name}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big")


def slot_values(listener: L4Listener, table: MaglevTable) -> list[str]:
    """``address . port`` for every slot of ``table`` (members looked up by place)."""
    by_key = {member.place_key: member for member in listener.members}
    targets = [_target(by_key[backend.key]) for backend in table.backends]
    return [targets[index] for index in table.slots]


def _target(member: L4Member) -> str:
    return f"{member.address} . {member.port}"


def render_base() -> list[str]:
    """The shared part, every statement idempotent: the dispatch map, the entry set and the
    base chains with their one rule each."""
    lines = [
        f"add table ip {TABLE}",
        f"add map ip {TABLE} dispatch {{ {DISPATCH_BODY} }}",
        f"add set ip {TABLE} entry_vips {{ type ipv4_addr; }}",
    ]
    hooks = (
        ("prerouting", "prerouting", "dstnat", "ip daddr . meta l4proto . th dport vmap @dispatch"),
        ("output", "output", "-100", "ip daddr . meta l4proto . th dport vmap @dispatch"),
        # Entry nodes: masquerade what came from elsewhere (not from a local socket) and
        # was DNATed to a member on another host, whose answer must come back through
        # this node to be un-NATed. Local clients keep their address.
        ("postrouting", "postrouting", "srcnat",
         "ct status dnat ct original ip daddr @entry_vips fib saddr type != local masquerade"),
    )  # fmt: skip
    for name, hook, priority, rule in hooks:
        where = f"ip {TABLE} {name}"
        lines += [
            f"add chain {where} {{ type nat hook {hook} priority {priority}; policy accept; }}",
            f"flush chain {where}",
            f"add rule {where} {rule}",
        ]
    return lines


def render_full(
    service: L4Service,
    tables: Mapping[str, MaglevTable],
    before: Footprint = Footprint(),
    *,
    legacy: bool = False,
    base: bool = True,
) -> str:
    """One load balancer rewritten in one transaction; ``tables`` by listener name.

    ``before``: what it held in the table (from the engine's memory or the kernel), so
    what it holds no more goes; ``legacy``: also remove its table of the old layout;
    ``base``: with the shared part first (several load balancers in one transaction need
    it once).
    """
    lb_id = service.lb_id
    chain = f"ip {TABLE} {chain_name(lb_id)}"
    lines = [*(render_base() if base else []), f"add chain {chain}", f"flush chain {chain}"]
    if legacy:
        lines += _legacy_delete(lb_id)
    now = footprint(service)
    lines += _forget(before, now)
    for listener in service.listeners:
        lines += _map_lines(lb_id, listener, tables[listener.name])
        if listener.allowed_cidrs:
            lines += _allow_set_lines(lb_id, listener)
        if listener.idle_timeout is not None:
            lines += _timeout_lines(lb_id, listener, listener.idle_timeout)
    lines += [f"add rule {chain} {rule}" for rule in _chain_rules(service, tables)]
    jump = f"jump {chain_name(lb_id)}"
    lines += [
        f"add element ip {TABLE} dispatch {{ {key} : {jump} }}" for key in sorted(now.dispatch)
    ]
    lines += [f"add element ip {TABLE} entry_vips {{ {vip} }}" for vip in sorted(now.entry_vips)]
    return "\n".join(lines) + "\n"


def render_new(
    service: L4Service, tables: Mapping[str, MaglevTable], *, elements: bool = True
) -> str:
    """A load balancer the table does not hold yet, added with declarations only
    (``elements`` False: its maps empty and no ``dispatch`` or ``entry_vips`` element, so
    that no flow reaches it until those are added: ``adoption.fill_steps``).

    ``nft`` 1.0.6 reads every chain and set of the namespace from the kernel before a
    transaction holding any ``add rule``, ``add element``, ``delete`` or ``flush map``,
    and only the tables before one that just declares tables, chains, maps, sets and
    timeouts (issue 34: at 10,000 load balancers the reading was most of "one more").
    So this transaction declares its maps, sets and timeouts with their elements, its
    chain with its rules (flushed first: an ``add`` of a chain's rules appends), and its
    ``dispatch`` and ``entry_vips`` elements by declaring those with them (an ``add`` of
    an existing map adds its elements, refused as ``add element`` is when a key is held
    with another verdict). Valid only where the shared part is in place and nothing of
    this load balancer is: an object of its name left with other contents makes the
    kernel refuse it, and the engine then loads it the full way (``render_full``).
    """
    lb_id = service.lb_id
    chain = f"ip {TABLE} {chain_name(lb_id)}"
    lines = []
    for listener in service.listeners:
        table = tables[listener.name] if elements else _EMPTY
        lines += _map_lines(lb_id, listener, table)[2:]
        if listener.allowed_cidrs:
            lines += _allow_set_lines(lb_id, listener)[2:]
        if listener.idle_timeout is not None:
            lines += _timeout_lines(lb_id, listener, listener.idle_timeout)[2:]
    rules = _chain_rules(service, tables)
    lines += [f"add chain {chain}", f"flush chain {chain}"]
    if rules:
        lines.append(f"add chain {chain} {{ {'; '.join(rules)}; }}")
    if not elements:
        return "\n".join(lines) + "\n"
    now = footprint(service)
    jump = f"jump {chain_name(lb_id)}"
    dispatch = ", ".join(f"{key} : {jump}" for key in sorted(now.dispatch))
    lines.append(f"add map ip {TABLE} dispatch {{ {DISPATCH_BODY} elements = {{ {dispatch} }} }}")
    if now.entry_vips:
        vips = ", ".join(sorted(now.entry_vips))
        lines.append(f"add set ip {TABLE} entry_vips {{ type ipv4_addr; elements = {{ {vips} }} }}")
    return "\n".join(lines) + "\n"


def _chain_rules(service: L4Service, tables: Mapping[str, MaglevTable]) -> list[str]:
    """The rules of the load balancer's chain, in order, listener by listener, each with
    its comment (``rule_comments``)."""
    plain = _plain_rules(service, tables)
    comments = _comments(service, tables, plain)
    pairs = zip(plain, comments, strict=True)
    return [f'{rule} comment "{comment}"' for (_name, rule), comment in pairs]


def rule_comments(service: L4Service, tables: Mapping[str, MaglevTable]) -> tuple[str, ...]:
    """The comments of the rules of the load balancer's chain, in order, as a full load
    writes them: ``<listener> <digest>``, the digest (``DEFINITION_FORMAT``, the rules
    without their comments and the definitions of the maps, sets and timeouts they use)
    the same on every rule. An agent that restarts compares these with the kernel's
    (``lbaas.l4.adoption``): equal, the chain and its objects are as this version would
    write them, and only the slot maps' elements need reading. Not JSON, as the code rules
    ask of metadata in a free-form field: nft's quoted strings cannot hold a double quote."""
    return _comments(service, tables, _plain_rules(service, tables))


#: Part of every digest: a change of how a load balancer is written changes every digest,
#: so a restarted agent of a new version reloads what an older one wrote.
DEFINITION_FORMAT = "lbaas-l4/1"


def _comments(
    service: L4Service, tables: Mapping[str, MaglevTable], plain: list[tuple[str, str]]
) -> tuple[str, ...]:
    definition = [DEFINITION_FORMAT, *(rule for _name, rule in plain)]
    for listener in service.listeners:
        definition += [_map_lines(service.lb_id, listener, _EMPTY)[0]]
        if listener.allowed_cidrs:
            definition += _allow_set_lines(service.lb_id, listener)[2:]
        if listener.idle_timeout is not None:
            definition += _timeout_lines(service.lb_id, listener, listener.idle_timeout)[:1]
    digest = hashlib.blake2b("\n".join(definition).encode(), digest_size=8).hexdigest()
    return tuple(f"{name} {digest}" for name, _rule in plain)


def _plain_rules(service: L4Service, tables: Mapping[str, MaglevTable]) -> list[tuple[str, str]]:
    """(listener name, rule without comment) of the chain, in order."""
    rules = []
    for listener in service.listeners:
        match = _match(service, listener)
        name = listener.name
        if listener.allowed_cidrs:
            rules.append((name, _filter_rule(service, listener)))
        if listener.connection_limit is not None:
            rules.append((name, f"{match} ct count over {listener.connection_limit} drop"))
        if listener.idle_timeout is not None:
            timeout = timeout_name(service.lb_id, listener)
            rules.append((name, f'{match} ct timeout set "{timeout}"'))
        if tables[listener.name].slots:
            rules.append((name, _rule(service, listener)))
    return rules


def _forget(before: Footprint, now: Footprint) -> list[str]:
    """Remove what ``before`` holds and ``now`` does not (elements first: a rule or element
    that refers to an object keeps it from being deleted)."""
    lines = []
    if gone := sorted(before.dispatch - now.dispatch):
        lines.append(f"delete element ip {TABLE} dispatch {{ {', '.join(gone)} }}")
    if gone := sorted(before.entry_vips - now.entry_vips):
        lines.append(f"delete element ip {TABLE} entry_vips {{ {', '.join(gone)} }}")
    for kind, name in sorted(before.objects - now.objects):  # declared first: it may be gone
        where = f"ip {TABLE} {name}"
        lines += [f"add {kind} {where} {{ {_DECLARATIONS[kind]} }}", f"delete {kind} {where}"]
    return lines


def _legacy_delete(lb_id: str) -> list[str]:
    name = LEGACY_PREFIX + lb_key(lb_id)
    return [f"add table ip {name}", f"delete table ip {name}"]


def _declared(kind: str, name: str, body: str, elements: list[str]) -> list[str]:
    """Declare, delete, define: ``name`` as ``body`` says, whether or not it existed, and
    whatever it was before."""
    where = f"ip {TABLE} {name}"
    full = body + (f" elements = {{ {', '.join(elements)} }}" if elements else "")
    return [
        f"add {kind} {where} {{ {body} }}",
        f"delete {kind} {where}",
        f"add {kind} {where} {{ {full} }}",
    ]


#: A table with no slots: a map's declaration without elements.
_EMPTY = MaglevTable(0, (), ())


def _map_lines(lb_id: str, listener: L4Listener, table: MaglevTable) -> list[str]:
    body = f"typeof numgen inc mod {listener.table_size} : ip daddr . th dport;"
    values = slot_values(listener, table) if table.slots else []
    elements = [f"{slot} : {value}" for slot, value in enumerate(values)]
    return _declared("map", map_name(lb_id, listener.name), body, elements)


def _allow_set_lines(lb_id: str, listener: L4Listener) -> list[str]:
    body = "type ipv4_addr; flags interval;"
    return _declared("set", allow_set_name(lb_id, listener), body, list(listener.allowed_ipv4()))


def _match(service: L4Service, listener: L4Listener) -> str:
    return f"ip daddr {service.vip} meta l4proto {listener.protocol.value} th dport {listener.port}"


def _filter_rule(service: L4Service, listener: L4Listener) -> str:
    """Drop a new flow from a source outside the listener's set, before it is balanced."""
    name = allow_set_name(service.lb_id, listener)
    return f"{_match(service, listener)} ip saddr != @{name} drop"


def _timeout_lines(lb_id: str, listener: L4Listener, seconds: int) -> list[str]:
    """The UDP timeout policy of a listener's flows: ``seconds`` replied or not."""
    body = f"protocol udp; l3proto ip; policy = {{ unreplied: {seconds}, replied: {seconds} }};"
    return _declared("ct timeout", timeout_name(lb_id, listener), body, [])


def render_allow_update(lb_id: str, old: L4Listener, new: L4Listener) -> str:
    """Delete and add the networks that differ between two versions of a listener's set."""
    was, now = set(old.allowed_ipv4()), set(new.allowed_ipv4())
    where = f"ip {TABLE} {allow_set_name(lb_id, new)}"
    text = ""
    if was - now:
        text += f"delete element {where} {{ {', '.join(sorted(was - now))} }}\n"
    if now - was:
        text += f"add element {where} {{ {', '.join(sorted(now - was))} }}\n"
    return text


def _hash_input(listener: L4Listener) -> str:
    prefix = listener.source_prefix
    if listener.hash_key is not HashKey.SOURCE_ADDRESS or prefix is None or prefix == 32:
        return _HASH_INPUT[listener.hash_key]
    mask = ipaddress.IPv4Network(f"0.0.0.0/{prefix}").netmask
    return f"ip saddr & {mask}"


def _rule(service: L4Service, listener: L4Listener) -> str:
    return (
        f"{_match(service, listener)} counter dnat ip to jhash {_hash_input(listener)} "
        f"mod {listener.table_size} seed {hash_seed(service.lb_id, listener):#010x} "
        f"map @{map_name(service.lb_id, listener.name)}"
    )


def dispatch_counts(listing: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """Flows per listener (``tcp_80``) by load balancer chain, from ``nft -j list map ip
    lbaas dispatch``: each element's counter is the flows it sent to its chain (dropped
    there by ``allowed_cidrs`` or ``connection_limit`` included). One listing of one map,
    whatever else the table holds: listing a chain or the table would make ``nft`` read
    every map's elements first (seconds at a thousand load balancers)."""
    counts: dict[str, dict[str, int]] = {}
    for key, verdict in _dispatch_elements(listing):
        _vip, protocol, port = key.split(" . ")
        chain = str(verdict.get("jump", {}).get("target", ""))
        counts.setdefault(chain, {})[f"{protocol}_{port}"] = _packets(verdict)
    return counts


def _dispatch_elements(listing: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(``VIP . protocol . port``, verdict with the element's ``counter``) of each element."""
    found = []
    for item in _items(listing, "map"):
        for key, verdict in item.get("elem", []):
            counted = key.get("elem", {})  # a map with counters wraps its keys
            value = counted.get("val", key)
            text = " . ".join(map(str, value["concat"]))
            found.append((text, {**verdict, "counter": counted.get("counter", {})}))
    return found


def _packets(verdict: Mapping[str, Any]) -> int:
    return int(verdict.get("counter", {}).get("packets", 0))


def render_slot_update(
    lb_id: str,
    listener_name: str,
    changes: Iterable[tuple[int, str]],
    deleted: Iterable[int] | None = None,
) -> str:
    """Rewrite the given slots (slot, ``address . port``) of one map in one transaction;
    ``deleted``: the slots that hold an element now (None: every changed slot)."""
    pairs = sorted(changes)
    gone = sorted(slot for slot, _ in pairs) if deleted is None else sorted(deleted)
    where = f"ip {TABLE} {map_name(lb_id, listener_name)}"
    text = f"delete element {where} {{ {', '.join(map(str, gone))} }}\n" if gone else ""
    if pairs:
        values = ", ".join(f"{slot} : {value}" for slot, value in pairs)
        text += f"add element {where} {{ {values} }}\n"
    return text


def render_delete(lb_id: str, before: Footprint, *, legacy: bool = False) -> str:
    """Remove the load balancer: its dispatch elements first (no new flow reaches its chain
    then), its chain, what else ``before`` says it holds; established flows keep their
    conntrack NAT. Declared first, so a load balancer that is not there is fine."""
    chain = f"ip {TABLE} {chain_name(lb_id)}"
    lines = [*render_base()[:3], f"add chain {chain}", f"flush chain {chain}"]
    lines += _forget(before, Footprint())  # after the flush: its rules refer to them
    lines.append(f"delete chain {chain}")
    if legacy:
        lines += _legacy_delete(lb_id)
    return "\n".join(lines) + "\n"


def kernel_footprints(
    dispatch: Mapping[str, Any], entry: Mapping[str, Any]
) -> dict[str, Footprint]:
    """What each load balancer holds in the kernel's table, by ``lb_key``, read from
    ``nft -j list map ip lbaas dispatch`` and ``nft -j list set ip lbaas entry_vips``: for
    load balancers the engine has not loaded since it started (an agent restarted), so
    what they hold no more can still go. Their maps, sets and timeouts are named after
    their dispatch keys' listeners (removed with declare-then-delete, whether or not each
    exists): listing the objects themselves would read every map's elements."""
    keys: dict[str, set[str]] = {}
    for key, verdict in _dispatch_elements(dispatch):
        target = str(verdict.get("jump", {}).get("target", ""))
        if target.startswith("lb_"):
            keys.setdefault(target[3:], set()).add(key)
    entry_vips = {str(vip) for item in _items(entry, "set") for vip in item.get("elem", [])}
    footprints = {}
    for lb, held in keys.items():
        vips = {key.split(" . ")[0] for key in held}
        listeners = {"_".join(key.split(" . ")[1:]) for key in held}
        footprints[lb] = Footprint(
            dispatch=frozenset(held),
            entry_vips=frozenset(vips & entry_vips),
            objects=frozenset(
                (kind, f"{prefix}_{lb}_{name}")
                for name in listeners
                for kind, prefix in (("map", "m"), ("set", "a"), ("ct timeout", "t"))
            ),
        )
    return footprints


def _items(listing: Mapping[str, Any], kind: str) -> list[Mapping[str, Any]]:
    return [item[kind] for item in listing.get("nftables", []) if kind in item]
