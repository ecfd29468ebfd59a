"""When the engine adds a load balancer alone (``nft.render_new``) and when it loads it the
full way, with a recording NftOps (issue 34)."""

from __future__ import annotations

import uuid

from lbaas.l4.engine import L4Engine
from lbaas.l4.host.base import NftCommandFailed
from lbaas.l4.host.recording import RecordingNftOps
from lbaas.l4.service import L4Listener, L4Member, L4Protocol, L4Service

MEMBERS = tuple(L4Member(f"member-{n}", f"10.30.0.{n}", 8080) for n in range(1, 4))


def service(index: int, members: tuple[L4Member, ...] = MEMBERS) -> L4Service:
    listener = L4Listener(L4Protocol.TCP, 80, members, table_size=101)
    return L4Service(str(uuid.UUID(int=(index + 1) << 100)), f"10.30.1.{index + 1}", (listener,))


class Tables(RecordingNftOps):
    """Answers ``has_table`` from a set; refuses the loads that contain ``refuse``."""

    def __init__(self, tables: set[str] | None = None, refuse: str | None = None) -> None:
        super().__init__()
        self.tables = tables or set()
        self.refuse = refuse

    def has_table(self, name: str) -> bool:
        return name in self.tables

    def load(self, ruleset: str) -> None:
        if self.refuse is not None and self.refuse in ruleset:
            raise NftCommandFailed(["nft", "-f", "-"], 1, "File exists")
        super().load(ruleset)


def alone(text: str) -> bool:
    return "add rule" not in text and "counter; elements = {" in text


def test_a_new_load_balancer_after_the_first_is_added_alone_unchecked() -> None:
    ops = RecordingNftOps()
    engine = L4Engine(ops)
    engine.apply(service(0))  # the first writes the shared part: a full load
    assert not alone(ops.loaded[0]) and ops.checked == ops.loaded
    report = engine.apply(service(1))
    assert report.full_reload and report.moved_slots == 101
    assert alone(ops.loaded[1]) and len(ops.checked) == 1
    assert "flush chain ip lbaas lb_" in ops.loaded[1]


def test_a_load_balancer_with_a_table_of_the_old_layout_is_loaded_the_full_way() -> None:
    second = service(1)
    ops = Tables({"lbaas_" + second.lb_id.replace("-", "")[:12]})
    engine = L4Engine(ops)
    engine.apply(service(0))
    engine.apply(second)
    assert not alone(ops.loaded[-1]) and "delete table ip lbaas_" in ops.loaded[-1]


def test_a_refused_addition_is_followed_by_a_checked_full_load() -> None:
    ops = Tables(refuse="counter; elements = {")  # the kernel refuses the addition
    engine = L4Engine(ops)
    engine.apply(service(0))
    engine.apply(service(1))
    assert len(ops.checked) == 2 and not alone(ops.loaded[-1])


def test_a_load_balancer_the_engine_applied_is_never_added_alone() -> None:
    ops = Tables()
    engine = L4Engine(ops)
    engine.apply(service(0))
    engine.apply(service(1, MEMBERS))
    engine.apply(service(1, ()))  # a listener left without members: a full reload
    assert not alone(ops.loaded[-1])
