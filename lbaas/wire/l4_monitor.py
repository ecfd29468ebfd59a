"""A pool's health monitor in the L4 agents' terms, shared by the providers whose agents
check members themselves with ``lbaas.l4.health`` (distributed nodes, amphora UDP pools).

A disabled health monitor is no monitor: members then count as healthy, as with HAProxy.
"""

from __future__ import annotations

from lbaas.model.graph import Pool
from lbaas.wire.l4 import L4MonitorSpec


def pool_monitor(pool: Pool | None) -> L4MonitorSpec | None:
    """``pool``'s admin-up health monitor for an agent's checker, or None."""
    monitor = None if pool is None else pool.health_monitor
    if monitor is None or not monitor.admin_state_up:
        return None
    return L4MonitorSpec(
        type=monitor.type.value,
        delay=monitor.delay,
        timeout=monitor.timeout,
        max_retries=monitor.max_retries,
        max_retries_down=monitor.max_retries_down,
        http_method=monitor.http_method.value if monitor.http_method else "GET",
        url_path=monitor.url_path or "/",
        expected_codes=monitor.expected_codes or "200",
        http_version=monitor.http_version or 1.0,
        domain_name=monitor.domain_name,
    )
