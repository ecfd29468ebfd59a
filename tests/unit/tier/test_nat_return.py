"""The NAT-return ruleset of a tier node, checked by the real ``nft -c`` (root)."""

from __future__ import annotations

import pytest

from lbaas.tier.nat_return import TABLE, render_nat_return
from tests.unit.l4.test_nft_render import nft_check


def test_masquerades_only_dnatted_flows_towards_member_networks() -> None:
    text = render_nat_return(("mem0", "mem1"))
    assert 'ct status dnat oifname { "mem0", "mem1" } counter masquerade' in text
    # Replaces an earlier table in the same transaction, so it can be loaded again.
    assert text.startswith(f"table ip {TABLE}\ndelete table ip {TABLE}\n")


@pytest.mark.parametrize("interfaces", [(), ("mem0", 'x" accept'), ("a" * 16,)])
def test_bad_interface_names_are_refused(interfaces: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        render_nat_return(interfaces)


@pytest.mark.root
def test_nft_accepts_it() -> None:
    done = nft_check(render_nat_return(("mem0",)))
    assert done.returncode == 0, done.stderr
