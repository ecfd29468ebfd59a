"""What Octavia holds of a load balancer, as the driver agent's get socket gives it
(reconcile.octavia_objects): octavia-lib's object, read through its to_dict."""

from __future__ import annotations

from typing import Any

from lbaas_octavia_provider.reconcile import octavia_objects


class ProviderLoadBalancer:
    """Shaped like octavia-lib's LoadBalancer: DriverLibrary.get_loadbalancer answers one
    of these, not a dictionary (the bug the restart e2e test found)."""

    def __init__(self, tree: dict[str, Any]) -> None:
        self.tree = tree

    def to_dict(self, recurse: bool = False) -> dict[str, Any]:
        assert recurse
        return self.tree


def test_every_object_of_the_tree_is_found() -> None:
    tree = {
        "loadbalancer_id": "lb",
        "listeners": [
            {
                "listener_id": "l",
                "l7policies": [{"l7policy_id": "p", "rules": [{"l7rule_id": "r"}]}],
            }
        ],
        "pools": [
            {
                "pool_id": "pool",
                "healthmonitor": {"healthmonitor_id": "hm"},
                "members": [{"member_id": "m1"}, {"member_id": "m2"}],
            },
            {"pool_id": "bare", "healthmonitor": None, "members": None},
        ],
    }
    expected = {
        ("loadbalancers", "lb"),
        ("listeners", "l"),
        ("l7policies", "p"),
        ("l7rules", "r"),
        ("pools", "pool"),
        ("healthmonitors", "hm"),
        ("members", "m1"),
        ("members", "m2"),
        ("pools", "bare"),
    }
    assert octavia_objects(ProviderLoadBalancer(tree)) == expected
    assert octavia_objects(tree) == expected
