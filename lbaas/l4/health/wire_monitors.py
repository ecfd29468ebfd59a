"""A monitor as the controller sends it (``L4MonitorSpec``) in the checker's own terms.

Both kernel data planes that check members apart from forwarding receive their monitors on
the wire: the L4 node (distributed load balancers) and an amphora's UDP listeners. One
translation serves both, so a monitor means the same thing wherever it is checked.
"""

from __future__ import annotations

from lbaas.l4.health.monitor import MonitorSpec, ProbeType
from lbaas.wire.l4 import L4MonitorSpec


def monitor_spec(monitor: L4MonitorSpec) -> MonitorSpec:
    return MonitorSpec(
        ProbeType(monitor.type),
        delay=monitor.delay,
        timeout=monitor.timeout,
        rise=monitor.max_retries,
        fall=monitor.max_retries_down,
        http_method=monitor.http_method,
        url_path=monitor.url_path,
        expected_codes=monitor.expected_codes,
        http_version=monitor.http_version,
        domain_name=monitor.domain_name,
    )
