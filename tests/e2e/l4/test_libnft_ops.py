"""LibNftOps (one libnftables context per namespace) and a new load balancer added alone.

Real nftables in namespaces this module creates and deletes, even when a test fails
(issue 34, docs/architecture.md, "The L4 engine"): the context programs its own namespace
and no other, a dry run changes nothing, a refusal is an error; a load balancer added by
``nft.render_new`` leaves the table as a full load of it would, a VIP another holds is
still refused, and traffic reaches a member through a load balancer added that way.
Needs root.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator

import pytest
from l4_lab import VIP, L4Lab, built_lab

from lbaas.errors import LbaasError
from lbaas.l4 import nft
from lbaas.l4.engine import L4Engine
from lbaas.l4.host.base import NftCommandFailed
from lbaas.l4.host.libnft import LibNftUnavailable, NftSession
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service
from tests.support.recorded_nft import RecordedLibNftOps

pytestmark = [pytest.mark.root]


def _netns(*argv: str) -> None:
    subprocess.run(["ip", "netns", *argv], check=True, capture_output=True, timeout=30)


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str]]:
    names = tuple(f"lbt-nft-{uuid.uuid4().hex[:8]}" for _ in range(2))
    try:
        for name in names:
            _netns("add", name)
        yield names[0], names[1]
    finally:
        for name in names:
            subprocess.run(["ip", "netns", "delete", name], check=False, timeout=30)


@pytest.fixture
def ops_pair(namespaces: tuple[str, str]) -> Iterator[tuple[RecordedLibNftOps, RecordedLibNftOps]]:
    first, second = RecordedLibNftOps(namespaces[0]), RecordedLibNftOps(namespaces[1])
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def balancer(index: int, *, vip: str | None = None, **options: object) -> L4Service:
    members = tuple(L4Member(f"m{index}-{k}", f"10.212.{index}.{k}", 8080) for k in (1, 2))
    listeners = [L4Listener(L4Protocol.TCP, 80, members, table_size=251, **options)]  # type: ignore[arg-type]
    listeners.append(L4Listener(L4Protocol.UDP, 53, members, table_size=251, idle_timeout=7))
    lb_id = str(uuid.UUID(int=(index + 1) << 100))  # its key: the first 12 hex digits
    return L4Service(lb_id, vip or f"10.210.0.{index + 1}", tuple(listeners))


def test_a_context_programs_its_own_namespace_only(
    ops_pair: tuple[RecordedLibNftOps, RecordedLibNftOps],
) -> None:
    first, second = ops_pair
    text = "add table ip probe\nadd set ip probe s { type ipv4_addr; elements = { 10.9.0.1 } }\n"
    first.check(text)
    assert not first.has_table("probe")  # a dry run changes nothing
    first.load(text)
    assert first.has_table("probe") and not second.has_table("probe")
    listing = first.list_json(("set", "ip", "probe", "s"))
    assert listing is not None and listing["nftables"][1]["set"]["elem"] == ["10.9.0.1"]
    assert second.list_json(("set", "ip", "probe", "s")) is None
    with pytest.raises(NftCommandFailed):
        first.load("add element ip probe missing { 10.9.0.2 }\n")
    assert first.list_table("probe") is not None and second.list_table("probe") is None


def test_a_session_needs_its_namespace_and_ends_with_close(
    namespaces: tuple[str, str],
) -> None:
    with pytest.raises(LibNftUnavailable):
        NftSession(f"lbt-nft-missing-{uuid.uuid4().hex[:8]}")
    session = NftSession(namespaces[0])
    assert session.run("add table ip probe", dry_run=True).ok
    session.close()
    session.close()
    with pytest.raises(LibNftUnavailable):
        session.run("list tables")


def test_a_load_balancer_added_alone_is_what_a_full_load_makes(
    ops_pair: tuple[RecordedLibNftOps, RecordedLibNftOps],
) -> None:
    first, second = ops_pair
    lbs = [balancer(0), balancer(1, allowed_cidrs=("10.50.0.0/16",), connection_limit=9)]
    alone = L4Engine(first)
    alone.apply(lbs[0])  # a full load: the engine writes the shared part
    assert alone.apply(lbs[1]).full_reload
    assert "add rule" not in first.loaded[-1]  # added alone
    together = L4Engine(second)
    together.apply_many(lbs)
    assert first.list_table(nft.TABLE) == second.list_table(nft.TABLE)
    assert f"lb_{nft.lb_key(lbs[1].lb_id)}" in (first.list_table(nft.TABLE) or "")


def test_a_new_load_balancer_on_a_held_vip_is_still_refused(
    ops_pair: tuple[RecordedLibNftOps, RecordedLibNftOps],
) -> None:
    ops = ops_pair[0]
    engine = L4Engine(ops)
    engine.apply(balancer(0))
    before = ops.list_table(nft.TABLE)
    with pytest.raises(LbaasError):
        engine.apply(balancer(1, vip="10.210.0.1"))
    assert ops.list_table(nft.TABLE) == before
    engine.remove(balancer(0).lb_id)
    engine.apply(balancer(1, vip="10.210.0.1"))  # free again: added alone
    assert "add rule" not in ops.loaded[-1]
    assert f"lb_{nft.lb_key(balancer(1).lb_id)}" in (ops.list_table(nft.TABLE) or "")


@pytest.fixture
def lab() -> Iterator[L4Lab]:
    with built_lab() as built:
        yield built


def test_traffic_reaches_a_member_through_a_load_balancer_added_alone(lab: L4Lab) -> None:
    ops = RecordedLibNftOps(lab.lb)
    try:
        engine = L4Engine(ops)
        engine.apply(balancer(0))
        listener = L4Listener(L4Protocol.TCP, 80, lab.members(), table_size=251)
        engine.apply(L4Service(str(uuid.UUID(int=99 << 100)), VIP, (listener,)))
        assert "add rule" not in ops.loaded[-1]
        assert lab.probe("tcp", 80, 5).startswith("b")
    finally:
        ops.close()
