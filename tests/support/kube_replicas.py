"""Replicas of the Kubernetes controller with leader election, in one test process:
each has its own Kubernetes client, its own counted Octavia client and its own elector,
built as ``lbaas kubernetes`` builds them (``command.build_election``).

A replica's Lease calls go through ``SeverableLeases``, a fake given to its elector
through the constructor: once severed, every call fails as an unreachable API server
fails, which is what a crashed or cut-off leader looks like to everyone else (it can
neither renew nor release). Every term's start and stop is appended to one shared list,
so a test can check that no two terms ever overlapped.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from lbaas.config import KubernetesSettings
from lbaas.errors import TemporaryError
from lbaas.integrations.kubernetes.base import Json, LeaseApi
from lbaas.integrations.kubernetes.command import build_election
from lbaas.integrations.kubernetes.controller import Controller
from lbaas.integrations.kubernetes.converge import Converger
from lbaas.integrations.kubernetes.kube_client import LightkubeKube
from lbaas.integrations.kubernetes.kube_config import for_server
from lbaas.integrations.kubernetes.leader import LeaderElector
from lbaas.integrations.kubernetes.octavia_sdk import SdkOctavia, connect
from tests.support.kubernetes import CountingOctavia

TermLog = list[tuple[str, str]]
"""("start" | "stop", replica name), in the order they happened."""


class SeverableLeases(LeaseApi):
    def __init__(self, inner: LeaseApi) -> None:
        self.inner = inner
        self.severed = False

    def _check(self) -> None:
        if self.severed:
            raise TemporaryError("Kubernetes API unreachable (severed by the test)")

    async def get_lease(self, namespace: str, name: str) -> Json | None:
        self._check()
        return await self.inner.get_lease(namespace, name)

    async def create_lease(self, body: Json) -> Json:
        self._check()
        return await self.inner.create_lease(body)

    async def update_lease(self, namespace: str, name: str, body: Json) -> Json:
        self._check()
        return await self.inner.update_lease(namespace, name, body)


@dataclass
class Replica:
    name: str
    elector: LeaderElector
    octavia: CountingOctavia
    leases: SeverableLeases
    task: asyncio.Task[None]

    async def stop(self) -> None:
        """A clean stop, as SIGTERM does it: the controller stops, the Lease is released."""
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


def assert_terms_never_overlap(terms: TermLog) -> None:
    running: str | None = None
    for event, name in terms:
        if event == "start":
            assert running is None, f"{name} started leading while {running} led: {terms}"
            running = name
        else:
            assert running == name, f"{name} stopped a term it did not run: {terms}"
            running = None


@asynccontextmanager
async def running_replica(
    name: str, kube_url: str, octavia_url: str, settings: KubernetesSettings, terms: TermLog
) -> AsyncIterator[Replica]:
    kube = LightkubeKube(for_server(kube_url))
    octavia = CountingOctavia(SdkOctavia(connect(None, octavia_url)))
    converger = Converger(octavia, wait_timeout=settings.wait_active_timeout)
    leases = SeverableLeases(kube)
    elector = LeaderElector(leases, build_election(settings, f"{name}-{uuid.uuid4().hex[:8]}"))

    async def lead() -> None:
        terms.append(("start", name))
        try:
            await Controller(kube, converger, settings).run()
        finally:
            terms.append(("stop", name))

    task = asyncio.create_task(elector.run(lead))
    try:
        yield Replica(name, elector, octavia, leases, task)
    finally:
        failed = task.done() and not task.cancelled() and task.exception() is not None
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await kube.aclose()
        if failed:
            task.result()  # the elector or its controller died: say why
