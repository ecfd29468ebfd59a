"""Asking a load balancer's data plane directly whether it still serves.

Heartbeats come from the agent, not from HAProxy. An agent that is paused, wedged or
restarting falls silent while HAProxy goes on serving every listener; rebuilding the
amphora then would interrupt traffic that was fine (and lock the load balancer against
tenant changes while it runs). So before the sweeper fails a silent amphora over, it asks
the data plane itself, from the health manager, over the VIP, for proof that HAProxy
lives, which must not depend on the tenant's backends:

* a TCP-family listener whose port refuses the connection, or accepts it and then does
  nothing, is not evidence of life: the kernel completes the handshake from the listen
  backlog even for a process that is stopped (SIGSTOP, wedged);
* HAProxy acting on the connection is. The probe sends no request: it half-closes the
  connection at once. HAProxy answers that itself (an HTTP frontend with a 400, a TCP one
  by closing), without waiting for a server; a request sent through (``HEAD /``, as
  before) waited for the backend, and right after the only backend of an HTTP listener
  died HAProxy answered only after its connect retries (some 3 s, past the 1 s
  ``health.probe_timeout``): a paused agent plus a dying backend looked like a dead
  amphora and a healthy one was failed over.
* Where the health manager may send from the VIP itself (the same host, loopback mode) it
  does, from ``VIP_PROBE_SOURCE_PORT``: every rendered frontend rejects that source at
  ``tcp-request connection`` time (``lbaas.render.haproxy.probe_source``), closing the
  connection unlogged, so the probe reaches neither the tenant's access log nor its
  session counts. From elsewhere the half-closed connection is logged as one empty
  connection (``<BADREQ>`` or ``CC``), never as a request.
* A reset right after the handshake is evidence too, wherever it surfaces: HAProxy's
  reject can land before the timed (non-blocking) connect reads its outcome
  (``ECONNRESET``) or before a half-close (``ENOTCONN``); the second failed a probe of
  a live HAProxy about one test run in twenty.

UDP and SCTP listeners are not probed. A load balancer none of whose listeners answers
is taken for dead, as before the probe existed: the probe can only prevent a failover.
"""

from __future__ import annotations

import abc
import errno
import logging
import socket
import struct

from lbaas.model.enums import ListenerProtocol
from lbaas.model.graph import Listener, LoadBalancer
from lbaas.render.haproxy.probe_source import VIP_PROBE_SOURCE_PORT, answered_by_reset

log = logging.getLogger(__name__)

_PROBED = frozenset(
    {
        ListenerProtocol.HTTP,
        ListenerProtocol.HTTPS,
        ListenerProtocol.TERMINATED_HTTPS,
        ListenerProtocol.PROMETHEUS,
        ListenerProtocol.TCP,
    }
)
_RESET_ON_CLOSE = struct.pack("ii", 1, 0)


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

    def __init__(self, timeout: float = 1.0, *, from_probe_source: bool = True) -> None:
        """``from_probe_source``: send from the VIP's probe source port where the VIP is
        this host's address (False: always from an ephemeral port, half-closed)."""
        self._timeout = timeout
        self._from_probe_source = from_probe_source

    def serving(self, graph: LoadBalancer) -> bool:
        for listener in graph.listeners:
            if listener.admin_state_up and listener.protocol in _PROBED:
                if self.answers(graph.vip.address, listener):
                    return True
        return False

    def answers(self, address: str, listener: Listener) -> bool:
        """Whether the process listening on ``address``:``listener.protocol_port`` acts on a
        connection that ends before any request."""
        try:
            source = self._from_probe_source
            return self._acts(address, listener.protocol_port, from_probe_source=source)
        except OSError as exc:
            if not self._from_probe_source or exc.errno != errno.EADDRNOTAVAIL:
                log.debug("probe of %s:%d: %s", address, listener.protocol_port, exc)
                return False
        # The probe source's connection to this port is taken just now (the agent's own
        # VIP probe): once more from any port, half-closed, logged as an empty connection.
        try:
            return self._acts(address, listener.protocol_port, from_probe_source=False)
        except OSError as exc:
            log.debug("probe of %s:%d: %s", address, listener.protocol_port, exc)
            return False

    def port_acts(self, address: str, port: int) -> bool:
        """Whether a live process acts on an empty connection to ``address``:``port``, sent
        from an ephemeral port (the own-address probe of a pair's amphora)."""
        try:
            return self._acts(address, port, from_probe_source=False)
        except OSError as exc:  # refused, timed out, unreachable: no evidence of life
            log.debug("probe of %s:%d: %s", address, port, exc)
            return False

    def _acts(self, address: str, port: int, *, from_probe_source: bool) -> bool:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        connected = False
        try:
            with socket.socket(family, socket.SOCK_STREAM) as conn:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_ON_CLOSE)
                if from_probe_source:
                    _send_from_the_probe_source(conn, address)
                conn.settimeout(self._timeout)
                conn.connect((address, port))
                connected = True
                conn.shutdown(socket.SHUT_WR)  # makes HAProxy act without a server
                conn.recv(1)  # bytes, or b"" when closed: either way someone acted
                return True
        except OSError as exc:
            if answered_by_reset(exc, connected=connected):
                return True  # a live process refused it after the handshake
            raise


def _send_from_the_probe_source(conn: socket.socket, address: str) -> None:
    """Bind ``conn`` to (``address``, VIP_PROBE_SOURCE_PORT) if that address is this
    host's; else leave the kernel to choose."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        conn.bind((address, VIP_PROBE_SOURCE_PORT))
    except OSError:  # not a local address, or the agent's probe holds the port just now
        pass
