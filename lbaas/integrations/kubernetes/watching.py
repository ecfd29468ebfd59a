"""List-then-watch loops, restarted forever: a relist at start and after 410 Gone.

Each loop lists its collection (handing the whole list to ``on_relist``, which replaces
that scope of the cache and queues every Service it touches), then watches from the
list's resourceVersion, passing each event to ``on_event``. A stream the server ends
normally is re-watched from the last resourceVersion seen (lightkube does so itself; the
loop here does it for a ``KubeApi`` whose watch ends); 410 Gone (the version is too old)
relists; connection errors back off and relist.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from lbaas.errors import LbaasError
from lbaas.integrations.kubernetes.base import Collection, Json, KubeApi, WatchExpired
from lbaas.integrations.kubernetes.pipeline import Backoff
from lbaas.model.enums import WatchEventType

LOG = logging.getLogger(__name__)


@dataclass
class WatchCounters:
    lists: int = 0
    expired: int = 0
    errors: int = 0
    events: int = 0


async def list_and_watch(
    kube: KubeApi,
    collection: Collection,
    on_relist: Callable[[list[Json]], Awaitable[None]],
    on_event: Callable[[str, Json], None],
    counters: WatchCounters,
    backoff: Backoff,
) -> None:
    """Until cancelled."""
    rng = random.Random()
    failures = 0
    while True:
        try:
            items, version = await kube.list(collection)
            counters.lists += 1
            await on_relist(items)
            failures = 0
            while True:
                async for event in kube.watch(collection, version):
                    obj = event.get("object") or {}
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if event.get("type") != WatchEventType.BOOKMARK:
                        counters.events += 1
                        on_event(str(event.get("type")), obj)
        except WatchExpired as exc:
            counters.expired += 1
            LOG.info("watch of %s expired (%s); relisting", collection, exc)
        except LbaasError as exc:
            counters.errors += 1
            delay = backoff.delay(failures, rng)
            failures += 1
            LOG.warning("watch of %s failed: %s; relisting in %.1fs", collection, exc, delay)
            await asyncio.sleep(delay)
