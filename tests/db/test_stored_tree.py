"""The stored tree: loaded typed, children ordered, turned into the graph, walked for settle."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, ClassVar

import pytest
from sqlalchemy import Table

from lbaas.db.engine import Database
from lbaas.db.loadbalancers import status_writer
from lbaas.db.loadbalancers.graph_loader import copied_fields, graph_from_tree, load_graph
from lbaas.db.loadbalancers.stored_tree import StoredListener, StoredMember, StoredObject, walk
from lbaas.db.loadbalancers.tree_loader import check_fields_match_columns, load_tree
from lbaas.db.tables import (
    HealthMonitorRow,
    L7PolicyRow,
    L7RuleRow,
    ListenerRow,
    LoadBalancerRow,
    MemberRow,
    PoolRow,
)
from lbaas.model import graph as G
from lbaas.model.enums import OperatingStatus, ProvisioningStatus

T0 = datetime(2026, 1, 1)
ACTIVE, DELETING = ProvisioningStatus.ACTIVE.value, ProvisioningStatus.PENDING_DELETE.value


def _common(object_id: str, seconds: int, status: str = ACTIVE) -> dict[str, Any]:
    return {
        "id": object_id,
        "project_id": "p",
        "admin_state_up": True,
        "provisioning_status": status,
        "operating_status": OperatingStatus.ONLINE.value,
        "created_at": T0 + timedelta(seconds=seconds),
    }


def _store(db: Database) -> None:
    with db.write() as session:
        session.add(
            LoadBalancerRow(**_common("lb", 0), provider="noop", topology="SINGLE", vip_sg_ids=[])
        )
        session.flush()
        for pool_id, at in (("pool-b", 2), ("pool-a", 1)):  # creation order, not id order
            session.add(
                PoolRow(
                    **_common(pool_id, at),
                    loadbalancer_id="lb",
                    protocol="HTTP",
                    lb_algorithm="ROUND_ROBIN",
                    tls_enabled=False,
                )
            )
        session.flush()
        for member_id, at, status in (("m-2", 4, DELETING), ("m-1", 3, ACTIVE)):
            session.add(
                MemberRow(
                    **_common(member_id, at, status),
                    pool_id="pool-a",
                    address="192.0.2.1",
                    protocol_port=80 + at,
                    weight=at,
                    backup=False,
                )
            )
        session.add(
            HealthMonitorRow(
                **_common("hm", 5), pool_id="pool-a", type="HTTP", delay=5, timeout=3,
                max_retries=3, max_retries_down=3, http_method="GET",
            )
        )  # fmt: skip
        session.add(
            ListenerRow(
                **_common("li", 6), loadbalancer_id="lb", protocol="HTTP", protocol_port=80,
                connection_limit=-1, default_pool_id="pool-a", timeout_client_data=1,
                timeout_member_connect=2, timeout_member_data=3, timeout_tcp_inspect=0,
                insert_headers={}, sni_container_refs=[], client_authentication="NONE",
                hsts_include_subdomains=False, hsts_preload=False, hsts_max_age=7,
            )
        )  # fmt: skip
        session.flush()
        for policy_id, position, status in (("pol-2", 2, ACTIVE), ("pol-1", 1, DELETING)):
            session.add(
                L7PolicyRow(
                    **_common(policy_id, 7, status), listener_id="li", action="REJECT",
                    position=position,
                )
            )  # fmt: skip
        session.flush()
        session.add(
            L7RuleRow(
                **_common("rule", 8), l7policy_id="pol-1", type="PATH",
                compare_type="STARTS_WITH", value="/x", invert=False,
            )
        )  # fmt: skip


def test_the_tree_is_typed_ordered_and_becomes_the_desired_graph(database: Database) -> None:
    _store(database)
    with database.read_connection() as conn:
        assert load_tree(conn, "absent") is None
        tree = load_tree(conn, "lb")
        assert tree is not None
        graph = graph_from_tree(conn, tree)
        assert load_graph(conn, "lb") == graph
    assert [p.id for p in tree.pools] == ["pool-a", "pool-b"]
    pool = tree.pools[0]
    assert [m.id for m in pool.members] == ["m-1", "m-2"]
    assert isinstance(pool.members[0], StoredMember)
    assert pool.health_monitor is not None and pool.health_monitor.http_method == "GET"
    assert [p.id for p in tree.listeners[0].l7policies] == ["pol-1", "pol-2"]
    assert [r.id for r in tree.listeners[0].l7policies[0].rules] == ["rule"]
    # The graph leaves out what is being deleted and copies same-named fields by name.
    assert [m.id for m in graph.pools[0].members] == ["m-1"]
    assert graph.pools[0].members[0].weight == 3
    assert graph.pools[0].health_monitor is not None
    listener = graph.listeners[0]
    assert [p.id for p in listener.l7policies] == ["pol-2"]
    assert listener.default_pool_id == "pool-a"
    assert listener.hsts_max_age == 7
    assert listener.timeouts == G.ListenerTimeouts(1, 2, 3, 0)
    # Settle sees children before parents, the doomed with their doomed children.
    order = [(row.id, doomed) for row, doomed in walk(tree)]
    assert order == [
        ("rule", True),
        ("pol-1", True),
        ("pol-2", False),
        ("li", False),
        ("m-1", False),
        ("m-2", True),
        ("hm", False),
        ("pool-a", False),
        ("pool-b", False),
        ("lb", False),
    ]
    snapshot = status_writer.snapshot_tree(tree)
    assert [(r.id, r.doomed) for r in snapshot.rows] == order
    assert snapshot.rows[0].table is tree.listeners[0].l7policies[0].rules[0].table


@dataclass(frozen=True, slots=True, kw_only=True)
class _ListenerMissingColumns(StoredObject):
    table: ClassVar[Table] = StoredListener.table
    loadbalancer_id: str
    protocol_prot: int


def test_a_stored_kind_must_declare_exactly_its_tables_columns() -> None:
    with pytest.raises(TypeError) as caught:
        check_fields_match_columns(_ListenerMissingColumns)
    assert "'protocol_port'" in str(caught.value)  # a column without its field
    assert "'protocol_prot'" in str(caught.value)  # a field without its column


@dataclass(frozen=True)
class _GraphMember:
    address: str
    weight: str  # stored as int: copying it by name would hand over the wrong type


def test_same_named_fields_of_different_types_must_be_converted_explicitly() -> None:
    with pytest.raises(TypeError, match="weight"):
        copied_fields(StoredMember, _GraphMember, frozenset())
    copy = copied_fields(StoredMember, _GraphMember, frozenset({"weight"}))
    member = StoredMember(
        **_common("m", 0), pool_id="p", name=None, address="192.0.2.9", protocol_port=80,
        weight=5, backup=False, subnet_id=None, monitor_address=None, monitor_port=None,
        vnic_type="normal", updated_at=None,
    )  # fmt: skip
    assert copy(member) == {"address": "192.0.2.9"}
