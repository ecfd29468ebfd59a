"""Asking a load balancer's data plane directly whether it still serves.

Heartbeats come from the agent, not from HAProxy. An agent that is paused, wedged or
restarting falls silent while HAProxy goes on serving every listener; rebuilding the
amphora then would interrupt traffic that was fine (and lock the load balancer against
tenant changes while it runs). So before the sweeper fails a silent amphora over, it asks
the data plane itself, from the health manager, over the VIP:

* a TCP-family listener whose port refuses the connection, or accepts it and then says
  nothing at all, is not evidence of life: the kernel completes the handshake from the
  listen backlog even for a process that is stopped;
* HAProxy doing anything with the connection is: any bytes back, or closing it. HTTP,
  HTTPS, TERMINATED_HTTPS and PROMETHEUS listeners are sent a small HTTP request so that
  HAProxy (or, for HTTPS pass-through, the backend through it) has something to answer;
  TCP listeners are sent nothing (the tenant's protocol is unknown), so they count only
  if the backend speaks first or HAProxy closes the connection.

UDP and SCTP listeners are not probed. A load balancer none of whose listeners answers
is taken for dead, as before the probe existed: the probe can only prevent a failover.
"""

from __future__ import annotations

import abc
import logging
import socket

from lbaas.model.enums import ListenerProtocol
from lbaas.model.graph import Listener, LoadBalancer

log = logging.getLogger(__name__)

_REQUESTING = frozenset(
    {
        ListenerProtocol.HTTP,
        ListenerProtocol.HTTPS,
        ListenerProtocol.TERMINATED_HTTPS,
        ListenerProtocol.PROMETHEUS,
    }
)
_PROBED = _REQUESTING | {ListenerProtocol.TCP}
_REQUEST = b"HEAD / HTTP/1.0\r\nUser-Agent: lbaas-health-probe\r\n\r\n"


class DataPlaneProbe(abc.ABC):
    """Whether a load balancer's data plane answers, whatever its agent says."""

    @abc.abstractmethod
    def serving(self, graph: LoadBalancer) -> bool:
        """True only on positive evidence that the data plane handles connections."""


class NoProbe(DataPlaneProbe):
    """Never any evidence: every silent amphora is failed over (the behaviour without one)."""

    def serving(self, graph: LoadBalancer) -> bool:
        return False


class ListenerProbe(DataPlaneProbe):
    """Connects to the enabled TCP-family listeners on the VIP, one after another."""

    def __init__(self, timeout: float = 1.0) -> None:
        self._timeout = timeout

    def serving(self, graph: LoadBalancer) -> bool:
        for listener in graph.listeners:
            if listener.admin_state_up and listener.protocol in _PROBED:
                if self.answers(graph.vip.address, listener):
                    return True
        return False

    def answers(self, address: str, listener: Listener) -> bool:
        """Whether whatever listens on ``address``:``listener.protocol_port`` reacts."""
        try:
            with socket.create_connection(
                (address, listener.protocol_port), timeout=self._timeout
            ) as conn:
                if listener.protocol in _REQUESTING:
                    conn.sendall(_REQUEST)
                conn.recv(1)  # bytes, or b"" when closed: either way someone acted
                return True
        except ConnectionResetError:
            return True  # reset after the handshake: a live process refused it
        except OSError as exc:  # refused, unreachable, or silent until the timeout
            log.debug("probe of %s:%d: %s", address, listener.protocol_port, exc)
            return False
