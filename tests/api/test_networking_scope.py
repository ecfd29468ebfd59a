"""The Networking-shaped reads are scoped like every other resource.

A VIP port belongs to its load balancer's project: another project's member or reader
gets 403 (after the 404 for a port that does not exist), admins see it. Operator-declared
networks and subnets are shared with every reader; callers with no role see nothing.
"""

from __future__ import annotations

from tests.api.resource_base import assert_neutron_fault
from tests.support.api_client import LOOPBACK_SUBNET, Api


def test_a_vip_port_is_visible_to_its_project_only(api: Api, admin: Api) -> None:
    lb = api.create_lb()
    port = f"/v2/ports/{lb['vip_port_id']}"
    assert api.get(port).json()["port"]["fixed_ips"][0]["ip_address"] == lb["vip_address"]
    assert api.as_("p-alpha", "reader").get(port).status_code == 200
    for prefix in ("/v2", "/v2.0"):
        other = f"{prefix}/ports/{lb['vip_port_id']}"
        assert_neutron_fault(api.as_("p-beta", "member").get(other), 403)
        assert_neutron_fault(api.as_("p-beta", "reader").get(other), 403)
        assert admin.get(other).status_code == 200
        # Octavia's new defaults: the global observer is the admin role; the older
        # load-balancer_global_observer role counts only with enforce_new_defaults off.
        assert_neutron_fault(api.as_("p-beta", "load-balancer_global_observer").get(other), 403)
    assert_neutron_fault(api.as_("p-beta", "member").get("/v2/ports/nope"), 404)


def test_shared_networks_are_read_by_readers_only(api: Api) -> None:
    for caller in (api, api.as_("p-beta", "reader")):
        subnets = caller.get("/v2/subnets").json()["subnets"]
        assert [s["id"] for s in subnets] == [LOOPBACK_SUBNET]
        assert caller.get(f"/v2/subnets/{LOOPBACK_SUBNET}").status_code == 200
        network = subnets[0]["network_id"]
        assert caller.get(f"/v2/networks/{network}").status_code == 200
        assert len(caller.get("/v2/networks").json()["networks"]) == 1
    nobody = api.as_("p-beta", "")
    for path in ("/v2/subnets", f"/v2/subnets/{LOOPBACK_SUBNET}", "/v2/networks"):
        assert_neutron_fault(nobody.get(path), 403)
