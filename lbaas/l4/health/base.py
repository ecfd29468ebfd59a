"""The one interface through which the health checker touches the network.

``probes.NetworkProber`` is the real one; unit tests pass a fake that answers from a table.
"""

from __future__ import annotations

import abc

from lbaas.l4.health.monitor import Target


class Prober(abc.ABC):
    @abc.abstractmethod
    async def probe(self, target: Target) -> bool:
        """Whether ``target`` passes one check of its monitor.

        Should finish within ``target.monitor.timeout``; the checker cancels it a little
        after that and counts a failure, as it does for any exception.
        """
