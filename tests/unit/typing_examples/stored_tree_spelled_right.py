"""Reads the stored tree with every column spelled right: ``mypy --strict`` passes."""

from __future__ import annotations

from lbaas.db.loadbalancers.stored_tree import StoredLoadBalancer


def first_listener_port(lb: StoredLoadBalancer) -> int | None:
    for listener in lb.listeners:
        return listener.protocol_port
    return None


def member_weights(lb: StoredLoadBalancer) -> list[int]:
    return [member.weight for pool in lb.pools for member in pool.members]
