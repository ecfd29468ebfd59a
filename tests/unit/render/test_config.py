"""The whole transform: global section, one backend per used pool, order and determinism."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import pytest

from lbaas.errors import PermanentError
from lbaas.model.enums import HealthMonitorType as HM
from lbaas.model.enums import ListenerProtocol as LP
from lbaas.model.graph import LoadBalancer, LoadBalancerId
from lbaas.render.haproxy import HaproxyContext, build_haproxy_view, render_haproxy_config
from tests.support.graphs import listener, load_balancer, monitor, pool, uid

from .golden_cases import CASES, GOLDEN_CONTEXT, RUN_DIR, GoldenCase, l7_actions, shared_pool
from .haproxy_runner import check_config, run_dir_config

T = TypeVar("T")


def test_global_section_comes_from_the_context() -> None:
    ctx = HaproxyContext("127.0.10.9", "/run/x/sock", "/var/lib/x", 1000, "u", "g", None)
    view = build_haproxy_view(load_balancer([listener("l")]), ctx)
    section = view.global_section
    assert section.runtime_socket == "/run/x/sock"
    assert section.server_state_file == "/var/lib/x/server-state"
    assert (section.user, section.group, section.maxconn) == ("u", "g", 1000)
    assert not section.external_checks


def test_global_maxconn_is_the_hosts_choice_never_a_tenants() -> None:
    lb = load_balancer(
        [listener("a", connection_limit=10), listener("b", LP.TCP, 81, connection_limit=90000)]
    )
    view = build_haproxy_view(lb, GOLDEN_CONTEXT)
    assert view.global_section.maxconn == GOLDEN_CONTEXT.maxconn_default
    assert [fe.maxconn for fe in view.frontends] == [10, 90000]


def test_external_checks_are_enabled_only_for_ping_monitors() -> None:
    def lb_with(kind: HM, admin: bool = True) -> LoadBalancer:
        return load_balancer(
            [listener("l", default_pool="p")], [pool("p", hm=monitor("hm", kind, admin=admin))]
        )

    assert build_haproxy_view(lb_with(HM.PING), GOLDEN_CONTEXT).global_section.external_checks
    assert not build_haproxy_view(lb_with(HM.TCP), GOLDEN_CONTEXT).global_section.external_checks
    disabled = lb_with(HM.PING, admin=False)
    assert not build_haproxy_view(disabled, GOLDEN_CONTEXT).global_section.external_checks


def test_a_shared_pool_is_one_backend() -> None:
    view = build_haproxy_view(shared_pool(), GOLDEN_CONTEXT)
    assert len(view.frontends) == 3
    assert [be.name for be in view.backends] == [f"be_{uid('pool', 'shared')}"]
    assert {fe.default_backend for fe in view.frontends} == {view.backends[0].name}


def test_frontends_by_port_and_backends_by_first_use() -> None:
    view = build_haproxy_view(l7_actions(), GOLDEN_CONTEXT)
    assert [be.name for be in view.backends] == [
        f"be_{uid('pool', 'web')}",
        f"be_{uid('pool', 'static')}",
        f"be_{uid('pool', 'api')}",
    ]
    lb = load_balancer([listener("b", port=90), listener("a", port=85), listener("c", LP.TCP, 9)])
    ports = [fe.port for fe in build_haproxy_view(lb, GOLDEN_CONTEXT).frontends]
    assert ports == [9, 85, 90]


def _shuffled(lb: LoadBalancer, rng: random.Random) -> LoadBalancer:
    def shuffle(items: tuple[T, ...]) -> tuple[T, ...]:
        copy = list(items)
        rng.shuffle(copy)
        return tuple(copy)

    listeners = tuple(
        replace(lst, l7policies=shuffle(lst.l7policies), allowed_cidrs=shuffle(lst.allowed_cidrs))
        for lst in lb.listeners
    )
    pools = tuple(replace(p, members=shuffle(p.members)) for p in lb.pools)
    return replace(lb, listeners=shuffle(listeners), pools=shuffle(pools))


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_text_does_not_depend_on_the_order_of_the_graphs_lists(case: GoldenCase) -> None:
    expected = render_haproxy_config(case.build(), case.ctx)
    rng = random.Random(7)
    for _ in range(5):
        assert render_haproxy_config(_shuffled(case.build(), rng), case.ctx) == expected


def test_bad_bind_address_or_load_balancer_id_is_refused() -> None:
    with pytest.raises(PermanentError):
        render_haproxy_config(load_balancer(), replace(GOLDEN_CONTEXT, bind_address="localhost"))
    bad_id = replace(load_balancer(), id=LoadBalancerId("lb\nglobal"))
    with pytest.raises(PermanentError):
        render_haproxy_config(bad_id, GOLDEN_CONTEXT)


def test_context_paths_are_quoted_where_they_land() -> None:
    ctx = replace(GOLDEN_CONTEXT, runtime_socket=f"{RUN_DIR}/my sock", state_dir="/var/lib/a b")
    text = render_haproxy_config(load_balancer(), ctx)
    assert f'stats socket "{RUN_DIR}/my sock" mode 600 level admin expose-fd listeners' in text
    assert 'server-state-file "/var/lib/a b/server-state"' in text


def test_hard_stop_after_bounds_how_long_a_replaced_worker_drains(tmp_path: Path) -> None:
    lb = load_balancer([listener("l")])
    assert "hard-stop-after" not in render_haproxy_config(lb, GOLDEN_CONTEXT)
    text = render_haproxy_config(lb, replace(GOLDEN_CONTEXT, hard_stop_after=900))
    global_section = text.split("\nglobal\n", 1)[1].split("\n\n", 1)[0]
    assert "    hard-stop-after 900s" in global_section.splitlines()
    checked = check_config(run_dir_config(text, tmp_path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
