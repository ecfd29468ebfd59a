"""The keepalived configurations rendered to ``tests/golden/keepalived/<name>.conf``.

Paths point under ``RUN_DIR`` and the VIP link is ``GOLDEN_INTERFACE``; the validation test
replaces the directory with a real one holding the shipped check script and runs
``keepalived --config-test`` in a scratch namespace that has a link of that name
(keepalived refuses a configuration naming a link it cannot see).
"""

from __future__ import annotations

from dataclasses import dataclass

from lbaas.render.keepalived import VrrpConfig

RUN_DIR = "/run/lbaas-golden"
GOLDEN_INTERFACE = "lbgold0"
CHECK = (f"{RUN_DIR}/haproxy-check", f"{RUN_DIR}/stats.sock")
NOTIFY = (f"{RUN_DIR}/vrrp-state", f"{RUN_DIR}/keepalived.state")


@dataclass(frozen=True)
class KeepalivedCase:
    name: str
    config: VrrpConfig


MASTER_V4 = VrrpConfig(
    instance_name="lb_1f2e3d4c",
    virtual_router_id=17,
    priority=200,
    interface=GOLDEN_INTERFACE,
    own_address="10.9.0.11",
    peer_address="10.9.0.12",
    vip="10.9.0.5/24",
    check_command=CHECK,
    notify_command=NOTIFY,
    realtime_priority=50,
)

CASES: tuple[KeepalivedCase, ...] = (
    KeepalivedCase("master_ipv4", MASTER_V4),
    KeepalivedCase(
        "backup_ipv4_slow_timers",
        VrrpConfig(
            instance_name="lb_1f2e3d4c",
            virtual_router_id=17,
            priority=100,
            interface=GOLDEN_INTERFACE,
            own_address="10.9.0.12",
            peer_address="10.9.0.11",
            vip="10.9.0.5/24",
            check_command=CHECK,
            advert_interval_ms=1000,
            check_fall=3,
        ),
    ),
    KeepalivedCase(
        "master_ipv6",
        VrrpConfig(
            instance_name="lb_6a6b",
            virtual_router_id=255,
            priority=254,
            interface=GOLDEN_INTERFACE,
            own_address="fd00:9::11",
            peer_address="fd00:9::12",
            vip="fd00:9::5/64",
            check_command=CHECK,
            advert_interval_ms=250,
        ),
    ),
)
