"""What the Octavia e2e tests read on both sides: member statuses in Octavia, and that a
deleted load balancer left nothing in either API."""

from __future__ import annotations

from tests.e2e.octavia.conftest import Front

COLLECTIONS = ("loadbalancers", "listeners", "pools", "healthmonitors", "l7policies")


def member_status(sides: Front, lb_id: str, key: str = "protocol_port") -> dict[object, str]:
    """Octavia's operating status of each member, by backend port (or ``key``)."""
    tree = sides.octavia_api.get(f"/v2/lbaas/loadbalancers/{lb_id}/status").json()
    return {
        member[key]: member["operating_status"]
        for listener in tree["statuses"]["loadbalancer"]["listeners"]
        for pool in listener["pools"]
        for member in pool["members"]
    }


def nothing_left(sides: Front) -> None:
    for api in (sides.octavia_api, sides.lbaas_api):
        for collection in COLLECTIONS:
            found = api.get(f"/v2/lbaas/{collection}").json()[collection]
            live = [o for o in found if o.get("provisioning_status") != "DELETED"]
            assert live == [], f"{collection} left at {api.base_url}: {live}"


def gone(sides: Front, lb_id: str) -> bool:
    lbaas = sides.lbaas_api.get(f"/v2/lbaas/loadbalancers/{lb_id}").status_code == 404
    octavia = sides.octavia_api.get(f"/v2/lbaas/loadbalancers/{lb_id}")
    return lbaas and (
        octavia.status_code == 404
        or octavia.json()["loadbalancer"]["provisioning_status"] == "DELETED"
    )
