"""Asking one amphora of an ACTIVE_STANDBY pair, on its own address, whether it lives.

A silent SINGLE amphora is probed on its VIP before it is failed over
(``lbaas.health.probe``), but a pair shares its VIP: the survivor answers it, so an answer
says nothing of the silent one, and every silent pair amphora used to be rebuilt. Under
load that was most of them: an agent leaves out of its round's heartbeats the amphorae
whose HAProxy statistics were not read within the round's deadline
(``AmphoraRegistry.health_reports``), and a health manager whose processing falls behind
records heartbeats late, so at 1,000 load balancers and load 35-50 healthy pair amphorae
went silent for over ``stale_after`` and were failed over 40-46 times (issue 34).

What only this amphora answers is its own VRRP address, and on it its HAProxy's
``peers`` listener (``HAPROXY_PEER_PORT``, which keeps the pair's stick tables alike).
The agent's filter lets that port in on the amphora's own address
(``lbaas.amphora.vip_filter``), and the probe is the VIP probe's: connect, half-close at
once, and count as life only HAProxy acting on it (closing it, or a reset after the
handshake). So:

* a busy agent or a late health manager in front of a live HAProxy: it answers, the
  amphora is left alone (``agent degraded``), as a SINGLE one whose VIP answers;
* HAProxy dead: the kernel refuses the connect at once, so the failover is not delayed;
* HAProxy stopped or wedged: the kernel completes the handshake from the backlog and then
  nothing acts: no evidence;
* the namespace gone or its host lost: nothing answers within the timeout: no evidence.

An agent that predates the filter rule drops the probe, so its pairs fail over on silence
as before. A host marked DOWN is not asked at all (its kernel did not answer already).
"""

from __future__ import annotations

import abc

from lbaas.health.probe import ListenerProbe
from lbaas.wire.datapath import HAPROXY_PEER_PORT


class OwnAddressProbe(abc.ABC):
    """Whether the amphora at one address (its VRRP address) still serves."""

    @abc.abstractmethod
    def answers(self, address: str) -> bool:
        """True only on evidence that this amphora's own HAProxy acts on a connection."""


class PeerPortProbe(OwnAddressProbe):
    """An empty connection to HAProxy's peers listener on the amphora's own address."""

    def __init__(self, timeout: float, port: int = HAPROXY_PEER_PORT) -> None:
        self._connect = ListenerProbe(timeout, from_probe_source=False)
        self._port = port

    def answers(self, address: str) -> bool:
        return self._connect.port_acts(address, self._port)
