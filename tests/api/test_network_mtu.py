"""A declared network MTU is stored and read back in the Networking API's shape."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.api_client import LOOPBACK_SUBNET, Api

NETWORK = "5e1d2c3b-0000-4000-8000-0000000000aa"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    subnet = {
        "id": "5e1d2c3b-0000-4000-8000-0000000000ab",
        "network_id": NETWORK,
        "cidr": "10.77.0.0/24",
        "gateway_ip": "10.77.0.1",
        "mtu": 1450,
    }
    return {"network": {"subnets": [subnet]}}


def test_a_declared_mtu_is_the_networks(api: Api) -> None:
    assert api.get(f"/v2/networks/{NETWORK}").json()["network"]["mtu"] == 1450
    loopback = api.get(f"/v2/subnets/{LOOPBACK_SUBNET}").json()["subnet"]["network_id"]
    assert api.get(f"/v2/networks/{loopback}").json()["network"]["mtu"] is None
