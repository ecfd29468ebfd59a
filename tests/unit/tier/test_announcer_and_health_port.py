"""A tier node's VIP routes file (parsed by the real ``bird -p`` through the node's
``include``) and the watcher's health-port check against real sockets on 127.0.0.1."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from lbaas.tier import bird
from lbaas.tier.health_port import split_endpoint, tcp_health_check
from lbaas.tier.host.bird import parse_check
from lbaas.tier.host.bird_announcer import render_routes


def _bird() -> str:
    binary = shutil.which("bird") or shutil.which("bird", path="/usr/sbin:/sbin")
    if binary is None:
        pytest.fail("the bird binary (Debian bird2) is required to check configurations")
    return binary


def test_the_agents_routes_file_is_included_by_the_nodes_static_protocol(tmp_path: Path) -> None:
    routes = tmp_path / "agent-vips.conf"
    config = bird.NodeConfig(
        router_id="10.0.0.2",
        router=bird.Peer("uplink", "10.0.0.1", bird.ROUTER_ASN),
        vips=("10.1.0.7",),
        include=str(routes),
    )
    path = tmp_path / "bird.conf"
    path.write_text(bird.render_node(config))
    assert f'  include "{routes}";' in path.read_text()
    for vips in (frozenset(), frozenset({"10.1.0.9", "10.1.0.8"})):
        routes.write_text(render_routes(vips))
        parse_check(path, bird_binary=_bird())
    assert render_routes(frozenset({"10.1.0.9", "10.1.0.8"})).splitlines()[1:] == [
        "route 10.1.0.8/32 blackhole;",
        "route 10.1.0.9/32 blackhole;",
    ]
    with pytest.raises(ValueError):
        render_routes(frozenset({"10.1.0.0/24"}))
    with pytest.raises(ValueError):
        bird.render_node(bird.NodeConfig("10.0.0.2", config.router, (), include='x"; }'))


def test_the_health_check_is_a_tcp_connect() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        check = tcp_health_check({"h1": f"127.0.0.1:{port}"}, tries=2, timeout=1.0)
        assert check("h1") is True
        assert check("h9") is False  # not a node of the tier
    assert check("h1") is False  # closed: refused
    with pytest.raises(ValueError):
        split_endpoint("127.0.0.1")
