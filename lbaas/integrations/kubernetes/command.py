"""``lbaas kubernetes``: build the controller from the settings and run it until SIGTERM
or SIGINT."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

from lbaas.config import KubernetesSettings
from lbaas.errors import ConfigError
from lbaas.integrations.kubernetes.controller import Controller
from lbaas.integrations.kubernetes.converge import Converger
from lbaas.integrations.kubernetes.kube_client import LightkubeKube
from lbaas.integrations.kubernetes.kube_config import from_settings
from lbaas.integrations.kubernetes.octavia_sdk import SdkOctavia, connect

LOG = logging.getLogger(__name__)


def build_converger(settings: KubernetesSettings) -> Converger:
    octavia = SdkOctavia(connect(settings.octavia_cloud, settings.octavia_endpoint))
    return Converger(
        octavia,
        wait_timeout=settings.wait_active_timeout,
        member_subnet_id=settings.member_subnet_id,
    )


async def _run(settings: KubernetesSettings) -> None:
    if not settings.vip_subnet_id:
        raise ConfigError("kubernetes.vip_subnet_id must be set")
    kube = LightkubeKube(from_settings(settings))
    controller = Controller(kube, build_converger(settings), settings)
    task = asyncio.create_task(controller.run())
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
