"""BIRD configurations of the L4 tier kept as golden files under tests/golden/tier/.

Rewrite them with ``python -m tests.unit.tier.bird_cases`` after a deliberate change.
"""

from __future__ import annotations

from pathlib import Path

from lbaas.tier import bird

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden" / "tier"

FABRIC_BFD = bird.Bfd("fab0")
NODES = tuple(bird.Peer(f"h{i}", f"10.70.1.{10 + i}", bird.NODE_ASN) for i in (1, 2, 3))
UPLINK = bird.Peer("uplink", "10.70.1.1", bird.ROUTER_ASN)

CASES: dict[str, bird.RouterConfig | bird.NodeConfig] = {
    "router_bfd": bird.RouterConfig("10.70.1.1", NODES, ("10.70.2.0/24",), bfd=FABRIC_BFD),
    "router_no_bfd": bird.RouterConfig(
        "10.70.1.1",
        NODES[:1],
        ("10.70.2.0/24", "198.51.100.0/25"),
        timers=bird.BgpTimers(hold=9, keepalive=3),
        max_paths=8,
    ),
    "node_two_vips_bfd": bird.NodeConfig(
        "10.70.1.11", UPLINK, ("10.70.2.201", "10.70.2.200", "10.70.2.201"), bfd=FABRIC_BFD
    ),
    "node_nothing_announced": bird.NodeConfig("10.70.1.12", UPLINK, ()),
}


def render(config: bird.RouterConfig | bird.NodeConfig) -> str:
    if isinstance(config, bird.RouterConfig):
        return bird.render_router(config)
    return bird.render_node(config)


def golden_path(name: str) -> Path:
    return GOLDEN_DIR / f"{name}.conf"


def regenerate() -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name, config in CASES.items():
        golden_path(name).write_text(render(config))


if __name__ == "__main__":
    regenerate()
