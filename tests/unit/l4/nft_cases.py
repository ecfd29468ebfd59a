"""Load balancers whose nftables rendering is kept as golden files under tests/golden/l4/."""

from __future__ import annotations

from pathlib import Path

from lbaas.l4 import nft
from lbaas.l4.service import HashKey, L4Listener, L4Member, L4Protocol, L4Service

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden" / "l4"
LB_ID = "5f0c1b7e-2d4a-4c1e-9b8f-0123456789ab"
VIP = "203.0.113.10"

TRIO = (
    L4Member("m-a", "10.20.0.11", 8080),
    L4Member("m-b", "10.20.0.12", 8080),
    L4Member("m-c", "10.20.0.13", 8081, weight=2),
)

#: 10,000 networks no two of which touch (so none merge): nft -c must take the set whole.
MANY_CIDRS = tuple(f"10.{i // 128}.{2 * (i % 128)}.0/24" for i in range(10_000))

CASES: dict[str, L4Service] = {
    "tcp_five_tuple": L4Service(LB_ID, VIP, (L4Listener(L4Protocol.TCP, 80, TRIO, table_size=7),)),
    "udp_source_ip": L4Service(
        LB_ID,
        VIP,
        (L4Listener(L4Protocol.UDP, 53, TRIO[:2], HashKey.SOURCE_ADDRESS, table_size=13),),
    ),
    "entry_node": L4Service(
        LB_ID, VIP, (L4Listener(L4Protocol.TCP, 80, TRIO, table_size=7),), entry=True
    ),
    "no_members": L4Service(LB_ID, VIP, (L4Listener(L4Protocol.TCP, 443, (), table_size=7),)),
    "tcp_udp_sctp": L4Service(
        LB_ID,
        VIP,
        (
            L4Listener(L4Protocol.TCP, 80, TRIO, table_size=11),
            L4Listener(L4Protocol.UDP, 80, TRIO, HashKey.SOURCE_ADDRESS, table_size=11),
            L4Listener(L4Protocol.SCTP, 9000, TRIO[1:], table_size=11),
        ),
    ),
    # Overlapping IPv4 networks merged; the IPv6 one matches nothing in an ip table.
    "allowed_cidrs_ipv4_ipv6": L4Service(
        LB_ID,
        VIP,
        (
            L4Listener(
                L4Protocol.TCP,
                80,
                TRIO,
                table_size=7,
                allowed_cidrs=("10.1.0.0/16", "10.1.2.0/24", "192.0.2.7/32", "2001:db8::/32"),
            ),
            L4Listener(L4Protocol.UDP, 53, TRIO[:2], HashKey.SOURCE_ADDRESS, table_size=13),
        ),
        entry=True,
    ),
    # IPv6 networks only: the set is empty and no IPv4 source opens a flow.
    "allowed_cidrs_ipv6_only": L4Service(
        LB_ID,
        VIP,
        (L4Listener(L4Protocol.UDP, 53, TRIO, table_size=7, allowed_cidrs=("2001:db8::/32",)),),
    ),
    "allowed_cidrs_10000": L4Service(
        LB_ID,
        VIP,
        (L4Listener(L4Protocol.TCP, 443, TRIO, table_size=7, allowed_cidrs=MANY_CIDRS),),
    ),
}


def render(service: L4Service) -> str:
    tables = {listener.name: listener.table() for listener in service.listeners}
    return nft.render_full(service, tables)


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.nft"


def regenerate() -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name, service in CASES.items():
        golden_path(name).write_text(render(service))


if __name__ == "__main__":
    regenerate()
