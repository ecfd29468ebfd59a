"""``lbaas kubernetes``: build the controller from the settings and run it until SIGTERM
or SIGINT; with ``leader_election`` (the default) only while this replica holds the
Lease, a fresh controller for each term."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from datetime import UTC, datetime

from lbaas.config import KubernetesSettings
from lbaas.errors import ConfigError
from lbaas.integrations.kubernetes.controller import Controller
from lbaas.integrations.kubernetes.converge import Converger
from lbaas.integrations.kubernetes.election import Election, ElectionTimings
from lbaas.integrations.kubernetes.kube_client import LightkubeKube
from lbaas.integrations.kubernetes.kube_config import from_settings, lease_namespace
from lbaas.integrations.kubernetes.leader import LeaderElector, replica_identity
from lbaas.integrations.kubernetes.octavia_sdk import SdkOctavia, connect

LOG = logging.getLogger(__name__)


def build_converger(settings: KubernetesSettings) -> Converger:
    octavia = SdkOctavia(connect(settings.octavia_cloud, settings.octavia_endpoint))
    return Converger(
        octavia,
        wait_timeout=settings.wait_active_timeout,
        member_subnet_id=settings.member_subnet_id,
    )


def build_election(settings: KubernetesSettings, identity: str) -> Election:
    timings = ElectionTimings(
        lease_duration=settings.lease_duration,
        renew_deadline=settings.renew_deadline,
        retry_period=settings.retry_period,
    )
    return Election(
        identity,
        lease_namespace(settings),
        settings.lease_name,
        timings,
        clock=time.monotonic,
        wall=lambda: datetime.now(UTC),
    )


async def _run(settings: KubernetesSettings) -> None:
    if not settings.vip_subnet_id:
        raise ConfigError("kubernetes.vip_subnet_id must be set")
    kube = LightkubeKube(from_settings(settings))
    converger = build_converger(settings)

    async def lead() -> None:
        await Controller(kube, converger, settings).run()

    if settings.leader_election:
        elector = LeaderElector(kube, build_election(settings, replica_identity()))
        task = asyncio.create_task(elector.run(lead))
        LOG.info("replica %s: acting only while it holds the Lease", elector.identity)
    else:
        task = asyncio.create_task(lead())
        LOG.info("leader election is off: acting at once")
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, task.cancel)
    LOG.info("watching Services (cluster %s)", settings.cluster_name)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        await kube.aclose()
    LOG.info("stopped")


def run(settings: KubernetesSettings) -> int:
    asyncio.run(_run(settings))
    return 0
