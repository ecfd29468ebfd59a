"""An operator's oslo.policy file overrides Octavia's rules by name, one endpoint at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.api.resource_base import assert_fault
from tests.support.api_client import Api

LBS = "/v2/lbaas/loadbalancers"
POLICY = """
# Nobody lists load balancers; showing one is untouched.
"os_load-balancer_api:loadbalancer:get_all": "!"
"os_load-balancer_api:loadbalancer:get_all-global": "!"
# Creating needs a role of the operator's own.
"os_load-balancer_api:loadbalancer:post": "role:lb-creator and rule:load-balancer:owner"
"""


@pytest.fixture
def settings_overrides(tmp_path: Path) -> dict[str, Any]:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    return {"api": {"policy_file": str(policy)}}


def test_the_file_changes_only_the_rules_it_names(api: Api, admin: Api) -> None:
    assert_fault(api.post(LBS, {"loadbalancer": {"vip_subnet_id": _subnet(admin)}}), 403)
    creator = api.as_("p-alpha", "member,lb-creator")
    made = creator.post(LBS, {"loadbalancer": {"vip_subnet_id": _subnet(admin)}})
    assert made.status_code == 201, made.text
    lb_id = made.json()["loadbalancer"]["id"]
    assert api.get(f"{LBS}/{lb_id}").status_code == 200  # get_one: Octavia's default
    assert_fault(api.get(LBS), 403)
    assert_fault(admin.get(LBS), 403)  # "!" is nobody, administrators included
    admin.wait_lb(lb_id)  # a write while PENDING_CREATE is Octavia's 409, not the policy's
    assert api.put(f"{LBS}/{lb_id}", {"loadbalancer": {"name": "x"}}).status_code == 200


def _subnet(admin: Api) -> str:
    subnet: str = admin.get("/v2/subnets").json()["subnets"][0]["id"]
    return subnet
