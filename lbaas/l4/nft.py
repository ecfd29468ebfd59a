"""nftables text for one load balancer: its own table, one slot map per listener.

Layout of ``table ip lbaas_<id>``::

    map tcp_80  { typeof numgen inc mod M : ip daddr . th dport; elements = { slot : member } }
    set allow_tcp_80 { type ipv4_addr; flags interval; elements = { 10.1.0.0/16, ... } }
    ct timeout idle_udp_53 { protocol udp; l3proto ip; policy = { unreplied: T, replied: T } }
    chain balance  { ip daddr VIP meta l4proto tcp th dport 80 ip saddr != @allow_tcp_80 drop
                     ip daddr VIP meta l4proto tcp th dport 80 ct count over N drop
                     ip daddr VIP meta l4proto udp th dport 53 ct timeout set "idle_udp_53"
                     ip daddr VIP meta l4proto tcp th dport 80 counter
                     dnat ip to jhash <key> mod M seed S map @tcp_80 comment "tcp_80" }
    chain prerouting (nat, dstnat)  -> jump balance     traffic arriving from elsewhere
    chain output     (nat, -100)    -> jump balance     traffic from this namespace itself
    chain entry      (nat, srcnat)  masquerade          entry node only (``L4Service.entry``)

One map lookup per new flow (conntrack handles the rest of the flow), whatever the number
of members: a data map of slot -> address . port needs no chain per member (a verdict map
to per-member DNAT chains would do the same with one more jump). ``jhash`` takes an explicit seed derived
from the load balancer and listener, so every node sends a given flow to the same slot.

``allow_<listener>`` exists only for a listener with ``allowed_cidrs``: one interval set
whatever the number of networks (one lookup, not a rule per network), checked before the
Maglev decision, so another source's flow is dropped before it is balanced. The NAT chains
see a flow's first packet only, so a change of the set decides new flows and leaves
established ones alone (conntrack holds them).

A listener's ``connection_limit`` is a ``ct count`` of its own (the kernel keeps the list of
the flows that passed the rule and drops their entries as conntrack forgets them): a new
flow past the limit is dropped before it is balanced, so a TCP client retries its SYN as
it would against a full HAProxy backlog. The count starts from zero when the table is
replaced (as a reloaded HAProxy counts only its own connections). A UDP listener's idle
timeout is a conntrack timeout policy (``ct timeout``) attached to each new flow's entry
before it is confirmed, for both of UDP's states.

A full load replaces the table in one transaction (declare, delete, define: the usual
idiom, which works whether or not the table exists); a slot update deletes and re-adds just
the moved elements, and a change of allowed networks deletes and adds just the networks
that changed, in the same transaction, so no packet sees a half-written map or set.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from lbaas.l4.maglev import MaglevTable
from lbaas.l4.service import HashKey, L4Listener, L4Member, L4Service

TABLE_PREFIX = "lbaas_"
_HASH_INPUT = {
    HashKey.FIVE_TUPLE: "ip saddr . th sport . ip daddr . th dport",
    HashKey.SOURCE_ADDRESS: "ip saddr",
}


def table_name(lb_id: str) -> str:
    """``lbaas_`` and the first 12 hex digits of the load balancer id."""
    return TABLE_PREFIX + lb_id.replace("-", "")[:12]


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


def render_full(service: L4Service, tables: Mapping[str, MaglevTable]) -> str:
    """The whole table of ``service`` as one transaction; ``tables`` by listener name."""
    name = table_name(service.lb_id)
    lines = [f"table ip {name}", f"delete table ip {name}", f"table ip {name} {{"]
    for listener in service.listeners:
        lines.extend(_map_lines(listener, tables[listener.name]))
        if listener.allowed_cidrs:
            lines.extend(_allow_set_lines(listener))
        if listener.idle_timeout is not None:
            lines.extend(_timeout_lines(listener, listener.idle_timeout))
    lines.append("\tchain balance {")
    for listener in service.listeners:
        if listener.allowed_cidrs:
            lines.append("\t\t" + _filter_rule(service, listener))
        if listener.connection_limit is not None:
            lines.append(f"\t\t{_match(service, listener)} ct count over "
                         f"{listener.connection_limit} drop")  # fmt: skip
        if listener.idle_timeout is not None:
            lines.append(
                f'\t\t{_match(service, listener)} ct timeout set "{_timeout_name(listener)}"'
            )
        if tables[listener.name].slots:
            lines.append("\t\t" + _rule(service, listener))
    lines.append("\t}")
    lines.extend(_hook_chain("prerouting", "prerouting", "dstnat"))
    lines.extend(_hook_chain("output", "output", "-100"))
    if service.entry:
        lines.extend(_entry_chain(service.vip))
    lines.append("}")
    return "\n".join(lines) + "\n"


def _map_lines(listener: L4Listener, table: MaglevTable) -> list[str]:
    lines = [
        f"\tmap {listener.name} {{",
        f"\t\ttypeof numgen inc mod {listener.table_size} : ip daddr . th dport",
    ]
    if table.slots:
        values = slot_values(listener, table)
        lines.append("\t\telements = {")
        lines.extend(f"\t\t\t{slot} : {value}," for slot, value in enumerate(values))
        lines.append("\t\t}")
    lines.append("\t}")
    return lines


def allow_set_name(listener: L4Listener) -> str:
    """The interval set of the sources a listener admits (``allow_tcp_80``)."""
    return f"allow_{listener.name}"


def _allow_set_lines(listener: L4Listener) -> list[str]:
    lines = [f"\tset {allow_set_name(listener)} {{", "\t\ttype ipv4_addr; flags interval;"]
    networks = listener.allowed_ipv4()
    if networks:
        lines.append("\t\telements = {")
        lines.extend(f"\t\t\t{network}," for network in networks)
        lines.append("\t\t}")
    lines.append("\t}")
    return lines


def _match(service: L4Service, listener: L4Listener) -> str:
    return f"ip daddr {service.vip} meta l4proto {listener.protocol.value} th dport {listener.port}"


def _filter_rule(service: L4Service, listener: L4Listener) -> str:
    """Drop a new flow from a source outside the listener's set, before it is balanced."""
    return f"{_match(service, listener)} ip saddr != @{allow_set_name(listener)} drop"


def _timeout_name(listener: L4Listener) -> str:
    return f"idle_{listener.name}"


def _timeout_lines(listener: L4Listener, seconds: int) -> list[str]:
    """The UDP timeout policy of a listener's flows: ``seconds`` replied or not."""
    return [
        f"\tct timeout {_timeout_name(listener)} {{",
        "\t\tprotocol udp; l3proto ip;",
        f"\t\tpolicy = {{ unreplied: {seconds}, replied: {seconds} }}",
        "\t}",
    ]


def render_allow_update(lb_id: str, old: L4Listener, new: L4Listener) -> str:
    """Delete and add the networks that differ between two versions of a listener's set."""
    was, now = set(old.allowed_ipv4()), set(new.allowed_ipv4())
    where = f"ip {table_name(lb_id)} {allow_set_name(new)}"
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
        f'map @{listener.name} comment "{listener.name}"'
    )


def _hook_chain(name: str, hook: str, priority: str) -> list[str]:
    return [
        f"\tchain {name} {{",
        f"\t\ttype nat hook {hook} priority {priority}; policy accept;",
        "\t\tjump balance",
        "\t}",
    ]


def _entry_chain(vip: str) -> list[str]:
    """Masquerade flows to the VIP that came from elsewhere (not from a local socket).

    A client with no node of its own reaches the VIP here, is DNATed to a member on
    another host and must get the answer back through this node to be un-NATed: the
    member sees this node's address. Local clients keep their address (source is local).
    """
    return [
        "\tchain entry {",
        "\t\ttype nat hook postrouting priority srcnat; policy accept;",
        f"\t\tct status dnat ct original ip daddr {vip} fib saddr type != local masquerade",
        "\t}",
    ]


def new_flow_counts(listing: Mapping[str, Any]) -> dict[str, int]:
    """New flows per listener from ``nft -j list chain ip <table> balance``.

    NAT chains see only the first packet of a connection, so the packet count of a
    listener's rule (found by its comment) is the number of flows it balanced.
    """
    counts: dict[str, int] = {}
    for item in listing.get("nftables", []):
        rule = item.get("rule")
        if not rule or "comment" not in rule:
            continue
        for expression in rule.get("expr", []):
            if "counter" in expression:
                counts[rule["comment"]] = int(expression["counter"]["packets"])
    return counts


def new_flow_counts_by_table(listing: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """``new_flow_counts`` of every table's ``balance`` chain, by table name, from one
    ``nft -j -t list ruleset ip`` (rules carry their table and chain)."""
    rules: dict[str, list[Any]] = {}
    for item in listing.get("nftables", []):
        rule = item.get("rule")
        if rule and rule.get("chain") == "balance" and "table" in rule:
            rules.setdefault(str(rule["table"]), []).append(item)
    return {table: new_flow_counts({"nftables": items}) for table, items in rules.items()}


def render_slot_update(lb_id: str, listener_name: str, changes: Iterable[tuple[int, str]]) -> str:
    """Rewrite the given slots (slot, ``address . port``) of one map in one transaction."""
    pairs = sorted(changes)
    if not pairs:
        return ""
    where = f"ip {table_name(lb_id)} {listener_name}"
    slots = ", ".join(str(slot) for slot, _ in pairs)
    values = ", ".join(f"{slot} : {value}" for slot, value in pairs)
    return f"delete element {where} {{ {slots} }}\nadd element {where} {{ {values} }}\n"


def render_delete(lb_id: str) -> str:
    """Remove the load balancer's table (declared first, so a missing table is fine)."""
    name = table_name(lb_id)
    return f"table ip {name}\ndelete table ip {name}\n"
