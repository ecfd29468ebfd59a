"""The lab's tenant networks on paper: names, ids and the localport rules (``nft -c``)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from lbaas.lab import instances


def test_tenant_network_ids_are_stable_per_lab_and_name() -> None:
    one = instances.tenant_network_id("lab", "net1")
    assert one == instances.tenant_network_id("lab", "net1")
    assert one != instances.tenant_network_id("lab", "net2")
    assert one != instances.tenant_network_id("other", "net1")


def test_link_names_fit_linux_limits_and_match_the_agents_bridge() -> None:
    from lbaas.metadata.namespaces import linux_bridge

    network = instances.tenant_network_id("lab", "net1")
    assert instances._bridge(network) == linux_bridge(network)  # the proxy joins it
    assert len(instances._bridge(network)) <= 15 and len(instances._vxlan(network)) <= 15
    assert 0 < instances._vni(network) < 2**24


@pytest.mark.skipif(shutil.which("nft") is None, reason="needs nft")
def test_localport_rules_parse_and_drop_the_metadata_address_and_mac(tmp_path: Path) -> None:
    text = instances._localport_rules()
    ruleset = tmp_path / "rules.nft"
    ruleset.write_text(text)
    done = subprocess.run(["nft", "-c", "-f", str(ruleset)], capture_output=True, text=True)
    if done.returncode != 0 and "Operation not permitted" in done.stderr:
        pytest.skip("nft -c needs CAP_NET_ADMIN here")
    assert done.returncode == 0, done.stderr
    for side in ("iifname", "oifname"):
        assert f'{side} "vx*" ether saddr fa:16:3e:a9:fe:fe drop' in text
        assert f'{side} "vx*" arp daddr ip 169.254.169.254 drop' in text
