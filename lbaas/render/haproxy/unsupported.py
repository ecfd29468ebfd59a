"""What this renderer refuses to render, checked up front, with a reason a tenant can read.

The HAProxy provider cannot serve everything Octavia's API can express yet. Rather than
render something that silently behaves differently, the renderer raises ``PermanentError``
(the load balancer goes to ERROR with ``user_message`` visible through the API). A provider
can call ``refuse_unsupported`` on its own to fail before any other work. Refused:

* Listeners that terminate TLS (TERMINATED_HTTPS, PROMETHEUS with certificates) whose
  certificate files the context does not name.
* UDP and SCTP listeners and pools: HAProxy does not proxy them.
* L7 policies on listeners other than HTTP and TERMINATED_HTTPS: HAProxy's HTTP rules need an HTTP frontend
  (Octavia's amphora driver answers 501 there too).
* The SOURCE_IP_PORT algorithm (Octavia's amphora driver does not offer it either).
* Enabled UDP-CONNECT or SCTP monitors, and enabled PING monitors when the context names
  no external check program.

Only what would be rendered is checked: a pool no listener uses is never refused.
"""

from __future__ import annotations

from lbaas.errors import PermanentError
from lbaas.model.enums import HealthMonitorType, LbAlgorithm, ListenerProtocol, PoolProtocol
from lbaas.model.graph import Listener, LoadBalancer, Pool
from lbaas.render.haproxy.context import HaproxyContext
from lbaas.render.haproxy.selection import pools_in_use

_UNSUPPORTED_LISTENER_PROTOCOLS = frozenset({ListenerProtocol.UDP, ListenerProtocol.SCTP})
_HTTP_LISTENERS = frozenset({ListenerProtocol.HTTP, ListenerProtocol.TERMINATED_HTTPS})
_UNSUPPORTED_POOL_PROTOCOLS = frozenset({PoolProtocol.UDP, PoolProtocol.SCTP})
_DATAGRAM_MONITORS = frozenset({HealthMonitorType.UDP_CONNECT, HealthMonitorType.SCTP})


def refuse_unsupported(lb: LoadBalancer, ctx: HaproxyContext) -> None:
    """Raise PermanentError if the graph asks for something this renderer cannot do."""
    for listener in lb.listeners:
        _refuse_listener(listener)
        if listener.terminates_tls and listener.id not in ctx.listener_tls:
            raise refusal(f"Listener {listener.id} has no certificate files to terminate TLS with.")
    for use in pools_in_use(lb):
        _refuse_pool(use.pool, ctx)


def _refuse_listener(listener: Listener) -> None:
    protocol = listener.protocol
    if protocol in _UNSUPPORTED_LISTENER_PROTOCOLS:
        raise refusal(f"{protocol} listeners are not supported by this provider yet.")
    if listener.l7policies and protocol not in _HTTP_LISTENERS:
        raise refusal(f"L7 policies on {protocol} listeners are not supported by this provider.")


def _refuse_pool(pool: Pool, ctx: HaproxyContext) -> None:
    if pool.protocol in _UNSUPPORTED_POOL_PROTOCOLS:
        raise refusal(f"{pool.protocol} pools are not supported by this provider yet.")
    if pool.lb_algorithm in (LbAlgorithm.SOURCE_IP_PORT, LbAlgorithm.MAGLEV):
        raise refusal(f"The {pool.lb_algorithm} algorithm is not supported by this provider.")
    monitor = pool.health_monitor
    if monitor is None or not monitor.admin_state_up:
        return
    if monitor.type in _DATAGRAM_MONITORS:
        raise refusal(f"{monitor.type} health monitors need a UDP or SCTP pool.")
    if monitor.type is HealthMonitorType.PING and ctx.external_check_script is None:
        raise refusal("PING health monitors are not enabled on this provider.")


def refusal(message: str) -> PermanentError:
    """The error for an unsupported request: ``message`` is shown to the tenant."""
    return PermanentError(message, f"haproxy renderer refused the graph: {message}")
