"""BIRD configurations of the tier: golden files, each parsed by the real ``bird -p``.

A missing ``bird`` is a failure, never a skip: a configuration nobody parsed is not known
to work (quickstart installs Debian's bird2).
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from lbaas.errors import InvalidRenderedConfig
from lbaas.tier import bird
from lbaas.tier.host.bird import parse_check

from .bird_cases import CASES, GOLDEN_DIR, NODES, UPLINK, golden_path, render


def _bird() -> str:
    binary = shutil.which("bird") or shutil.which("bird", path="/usr/sbin:/sbin")
    if binary is None:
        pytest.fail("the bird binary (Debian bird2) is required to check configurations")
    return binary


@pytest.mark.parametrize("name", sorted(CASES))
def test_render_matches_golden(name: str) -> None:
    assert render(CASES[name]) == golden_path(name).read_text()


def test_every_golden_file_belongs_to_a_case() -> None:
    assert {path.stem for path in GOLDEN_DIR.glob("*.conf")} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_is_parsed_by_bird(name: str) -> None:
    parse_check(golden_path(name), bird_binary=_bird())


def test_bird_refuses_a_broken_configuration(tmp_path: Path) -> None:
    # The check is not a formality: "router" is a keyword, not a protocol name.
    broken = tmp_path / "broken.conf"
    broken.write_text(golden_path("node_nothing_announced").read_text().replace("uplink", "router"))
    with pytest.raises(InvalidRenderedConfig):
        parse_check(broken, bird_binary=_bird())


def test_the_router_accepts_only_host_routes_of_its_vip_networks() -> None:
    text = render(CASES["router_no_bfd"])
    assert "import where net ~ [ 10.70.2.0/24{32,32}, 198.51.100.0/25{32,32} ];" in text
    assert "export none;" in text and "merge paths on limit 8;" in text
    assert "bfd" not in text


def test_a_node_announces_each_vip_once_and_exports_only_them() -> None:
    text = render(CASES["node_two_vips_bfd"])
    assert text.count("route 10.70.2.201/32 blackhole;") == 1
    assert text.index("10.70.2.200/32") < text.index("10.70.2.201/32")
    assert 'export where proto = "vips";' in text and "import none;" in text
    assert "bfd on;" in text and "protocol kernel" not in text


@pytest.mark.parametrize(
    "config",
    [
        bird.NodeConfig("10.70.1.12", UPLINK, ("10.70.2.300",)),
        bird.NodeConfig("not-an-address", UPLINK, ()),
        bird.NodeConfig("10.70.1.12", replace(UPLINK, name="up link"), ()),
        bird.NodeConfig("10.70.1.12", replace(UPLINK, asn=0), ()),
        bird.NodeConfig("10.70.1.12", UPLINK, (), bfd=bird.Bfd('fab0"; }')),
        bird.NodeConfig("10.70.1.12", UPLINK, (), timers=bird.BgpTimers(hold=2)),
        bird.RouterConfig("10.70.1.1", NODES, ()),
        bird.RouterConfig("10.70.1.1", NODES, ("10.70.2.0/24",), max_paths=0),
    ],
)
def test_bad_values_are_refused_before_bird_sees_them(
    config: bird.RouterConfig | bird.NodeConfig,
) -> None:
    with pytest.raises(ValueError):
        render(config)
