"""The vip and members hops on what an agent saw of its amphora now
(``AmphoraDiagnosis``): a process other than the amphora's HAProxy on the VIP:port fails
the vip hop, named; a member down says why, in HAProxy's words."""

from __future__ import annotations

from typing import Any

from lbaas.db.amphorae.amphora_repo import AmphoraFacts
from lbaas.db.loadbalancers.facts import LoadBalancerFacts
from lbaas.diagnose.agent_hops import AgentLooks
from lbaas.diagnose.base import VipProbe
from lbaas.diagnose.hops import member_hops, vip_hops
from lbaas.diagnose.verdict import Level
from lbaas.model.enums import OperatingStatus
from lbaas.model.graph import Listener
from lbaas.wire.amphora_diagnosis import (
    AmphoraDiagnosis,
    ListeningProcess,
    ServerCheck,
    VipPortCheck,
)

NOW = 1_000.0
LISTENER = "6a1c7d0e-0000-4000-8000-000000000001"
MEMBER = "6a1c7d0e-0000-4000-8000-000000000002"


class _NeverAsked(VipProbe):
    def answers(self, address: str, listener: Listener) -> bool:
        raise AssertionError("an amphora's VIP must not be probed from here")


class _Obj:
    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


def _facts() -> LoadBalancerFacts:
    listener = _Obj(
        id=LISTENER, admin_state_up=True, protocol="HTTP", protocol_port=80, default_pool_id="p"
    )
    graph = _Obj(listeners=[listener], vip=_Obj(address="127.0.10.5"))
    member = _Obj(
        id=MEMBER,
        address="127.0.0.1",
        protocol_port=8080,
        admin_state_up=True,
        operating_status=OperatingStatus.ERROR,
    )
    pool = _Obj(id="p", members=[member], health_monitor=object())
    tree = _Obj(pools=[pool])
    amphora = AmphoraFacts("amp-1", "ALLOCATED", "127.0.0.1", NOW - 1, False)
    return LoadBalancerFacts(tree, graph, None, [amphora])  # type: ignore[arg-type]


def test_a_foreign_listener_on_the_vip_fails_the_hop_named() -> None:
    stray = ListeningProcess(pid=4242, command="haproxy -W -f /old/state/haproxy.cfg")
    port = VipPortCheck(listener_id=LISTENER, port=80, answers=True, foreign=(stray,))
    looks = AgentLooks({"amp-1": AmphoraDiagnosis(amphora_id="amp-1", haproxy_pids=(7, 8))})
    (alone,) = vip_hops(_facts(), _NeverAsked(), 30.0, NOW, _with(looks, port, foreign=False))
    assert alone.level is Level.OK and "amphora amp-1: answers now" in alone.detail
    (verdict,) = vip_hops(_facts(), _NeverAsked(), 30.0, NOW, _with(looks, port, foreign=True))
    assert verdict.level is Level.FAIL, verdict
    assert "pid 4242 (haproxy -W -f /old/state/haproxy.cfg)" in verdict.detail
    assert "not amphora amp-1's HAProxy (pids 7, 8)" in verdict.detail


def _with(looks: AgentLooks, port: VipPortCheck, *, foreign: bool) -> AgentLooks:
    seen = looks.seen["amp-1"]
    checked = port if foreign else port.model_copy(update={"foreign": ()})
    return AgentLooks({"amp-1": seen.model_copy(update={"vip_ports": (checked,)})})


def test_a_vip_with_no_answer_now_says_why() -> None:
    port = VipPortCheck(listener_id=LISTENER, port=80, answers=False, error="Connection refused")
    looks = AgentLooks({"amp-1": AmphoraDiagnosis(amphora_id="amp-1", haproxy_pids=(7,))})
    (verdict,) = vip_hops(_facts(), _NeverAsked(), 30.0, NOW, _with(looks, port, foreign=False))
    assert verdict.level is Level.FAIL, verdict
    assert "amphora amp-1: no answer now (Connection refused)" in verdict.detail


def test_a_down_member_says_why_in_haproxys_words() -> None:
    refused = ServerCheck(
        backend="be_p",
        server=f"srv_{MEMBER}",
        status="DOWN",
        check_status="L4CON",
        check_desc="Layer4 connection problem",
        last_check="Connection refused",
    )
    looks = AgentLooks({"amp-1": AmphoraDiagnosis(amphora_id="amp-1", servers=(refused,))})
    (verdict,) = member_hops(_facts(), looks)
    assert verdict.level is Level.FAIL
    assert "failing its health check; HAProxy on amphora amp-1: DOWN, last check L4CON" in (
        verdict.detail
    )
    assert "(Layer4 connection problem): Connection refused" in verdict.detail
    status_503 = refused.model_copy(
        update={"check_status": "L7STS", "check_code": "503", "last_check": None}
    )
    looks = AgentLooks({"amp-1": AmphoraDiagnosis(amphora_id="amp-1", servers=(status_503,))})
    (verdict,) = member_hops(_facts(), looks)
    assert "last check L7STS 503" in verdict.detail
