"""What the renderer refuses, with a reason, and what it does not refuse."""

from __future__ import annotations

from dataclasses import replace

import pytest

from lbaas.errors import PermanentError
from lbaas.model.enums import HealthMonitorType as HM
from lbaas.model.enums import L7CompareType as Compare
from lbaas.model.enums import L7PolicyAction as Action
from lbaas.model.enums import L7RuleType as Rule
from lbaas.model.enums import LbAlgorithm as Algo
from lbaas.model.enums import ListenerProtocol as LP
from lbaas.model.enums import PoolProtocol as PP
from lbaas.model.graph import LoadBalancer, Pool
from lbaas.render.haproxy.config import render_haproxy_config
from lbaas.render.haproxy.unsupported import refuse_unsupported
from tests.support.graphs import listener, load_balancer, monitor, policy, pool, rule

from .golden_cases import GOLDEN_CONTEXT

REJECT_ALL = policy("p", Action.REJECT, 1, [rule("r", Rule.PATH, Compare.STARTS_WITH, "/")])


def _with_pool(target: Pool) -> LoadBalancer:
    return load_balancer([listener("l", default_pool=target.name)], [target])


REFUSED = {
    "terminated-https": load_balancer([listener("l", LP.TERMINATED_HTTPS, 443)]),
    "udp-listener": load_balancer([listener("l", LP.UDP, 53)]),
    "sctp-listener": load_balancer([listener("l", LP.SCTP, 5000)]),
    # Certificates but no files for them: never served in plain text instead.
    "prometheus-tls": load_balancer(
        [listener("l", LP.PROMETHEUS, 9100, default_tls_container_ref="https://kms/secret")]
    ),
    "l7-on-tcp": load_balancer([listener("l", LP.TCP, 9000, policies=[REJECT_ALL])]),
    "udp-pool": _with_pool(pool("p", protocol=PP.UDP)),
    "sctp-pool": _with_pool(pool("p", protocol=PP.SCTP)),
    "source-ip-port": _with_pool(pool("p", algorithm=Algo.SOURCE_IP_PORT)),
    "udp-connect-monitor": _with_pool(pool("p", hm=monitor("hm", HM.UDP_CONNECT))),
    "sctp-monitor": _with_pool(pool("p", hm=monitor("hm", HM.SCTP))),
}


@pytest.mark.parametrize("lb", REFUSED.values(), ids=REFUSED.keys())
def test_unsupported_graphs_are_refused_with_a_user_message(lb: LoadBalancer) -> None:
    with pytest.raises(PermanentError) as refused:
        refuse_unsupported(lb, GOLDEN_CONTEXT)
    assert refused.value.user_message
    with pytest.raises(PermanentError):
        render_haproxy_config(lb, GOLDEN_CONTEXT)


def test_ping_needs_a_script_in_the_context() -> None:
    lb = _with_pool(pool("p", hm=monitor("hm", HM.PING)))
    refuse_unsupported(lb, GOLDEN_CONTEXT)
    with pytest.raises(PermanentError, match="PING"):
        refuse_unsupported(lb, replace(GOLDEN_CONTEXT, external_check_script=None))


def test_disabled_monitors_are_not_refused() -> None:
    lb = _with_pool(pool("p", hm=monitor("hm", HM.UDP_CONNECT, admin=False)))
    refuse_unsupported(lb, replace(GOLDEN_CONTEXT, external_check_script=None))


def test_pools_no_listener_uses_are_not_refused() -> None:
    lb = load_balancer([listener("l")], [pool("unused", protocol=PP.UDP, tls_enabled=True)])
    refuse_unsupported(lb, GOLDEN_CONTEXT)
    assert "be_" not in render_haproxy_config(lb, GOLDEN_CONTEXT)
