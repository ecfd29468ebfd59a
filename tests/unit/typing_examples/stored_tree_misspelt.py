"""The same reads with two columns misspelt: ``mypy --strict`` must report both."""

from __future__ import annotations

from lbaas.db.loadbalancers.stored_tree import StoredLoadBalancer


def first_listener_port(lb: StoredLoadBalancer) -> int | None:
    for listener in lb.listeners:
        return listener.protocl_port  # misspelt: protocol_port
    return None


def member_weights(lb: StoredLoadBalancer) -> list[int]:
    return [member.wieght for pool in lb.pools for member in pool.members]  # weight
