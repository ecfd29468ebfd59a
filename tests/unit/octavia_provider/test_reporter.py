"""What Octavia is told (reporter.py, status.py): changes only, vanished objects DELETED,
children before parents, and a push that failed is sent again."""

from __future__ import annotations

from typing import Any

import pytest
from lbaas_octavia_provider.reporter import Reporter
from lbaas_octavia_provider.status import Snapshot


class RecordingSink:
    """The driver agent's sockets, as a list of what was sent (failing when told to)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.stats: list[dict[str, Any]] = []
        self.fail = False

    def update_loadbalancer_status(self, status: dict[str, Any]) -> None:
        if self.fail:
            raise OSError("driver agent away")
        self.sent.append(status)

    def update_listener_statistics(self, statistics: dict[str, Any]) -> None:
        self.stats.append(statistics)

    def get_loadbalancer(self, loadbalancer_id: str) -> Any:
        return None


def _snap(**statuses: tuple[str, str]) -> Snapshot:
    snap = Snapshot("lb", exists=True)
    for key, value in statuses.items():
        collection, object_id = key.split("__")
        snap.statuses[(collection, object_id)] = value
    return snap


def test_only_changes_are_sent_and_children_come_first() -> None:
    sink = RecordingSink()
    reporter = Reporter(sink)
    first = _snap(loadbalancers__lb=("ACTIVE", "ONLINE"), members__m=("ACTIVE", "ONLINE"))
    assert reporter.push(first)
    assert list(sink.sent[0]) == ["members", "loadbalancers"]
    assert not reporter.push(first)
    down = _snap(loadbalancers__lb=("ACTIVE", "DEGRADED"), members__m=("ACTIVE", "ERROR"))
    assert reporter.push(down)
    assert sink.sent[1]["members"] == [
        {"id": "m", "provisioning_status": "ACTIVE", "operating_status": "ERROR"}
    ]


def test_what_lbaas_no_longer_has_is_reported_deleted() -> None:
    sink = RecordingSink()
    reporter = Reporter(sink)
    reporter.push(_snap(loadbalancers__lb=("ACTIVE", "ONLINE"), listeners__l=("ACTIVE", "ONLINE")))
    reporter.push(_snap(loadbalancers__lb=("ACTIVE", "ONLINE")))
    assert sink.sent[-1] == {"listeners": [{"id": "l", "provisioning_status": "DELETED"}]}
    reporter.push(Snapshot("lb", exists=False))
    assert sink.sent[-1] == {"loadbalancers": [{"id": "lb", "provisioning_status": "DELETED"}]}
    assert reporter.known() == []


def test_a_failed_push_is_sent_again_next_time() -> None:
    sink = RecordingSink()
    reporter = Reporter(sink)
    snap = _snap(loadbalancers__lb=("ACTIVE", "ONLINE"))
    sink.fail = True
    with pytest.raises(OSError):
        reporter.push(snap)
    sink.fail = False
    assert reporter.push(snap)
    assert sink.sent[0]["loadbalancers"][0]["provisioning_status"] == "ACTIVE"


def test_listener_counters_are_sent_when_they_change() -> None:
    sink = RecordingSink()
    reporter = Reporter(sink)
    counters = {"bytes_in": 10, "bytes_out": 20, "total_connections": 3}
    assert reporter.push_stats("l", counters)
    assert not reporter.push_stats("l", counters)
    assert sink.stats[0]["listeners"][0] == {
        "id": "l",
        "active_connections": 0,
        "bytes_in": 10,
        "bytes_out": 20,
        "request_errors": 0,
        "total_connections": 3,
    }


def test_lbaas_pending_statuses_are_never_sent_and_their_outcome_always_is() -> None:
    # Octavia sets its own PENDING_*; a PENDING_* read before lbaas converged and sent
    # after the ACTIVE read later would put Octavia's load balancer back to PENDING_*.
    sink = RecordingSink()
    reporter = Reporter(sink)
    reporter.push(_snap(loadbalancers__lb=("ACTIVE", "ONLINE"), listeners__l=("ACTIVE", "ONLINE")))
    busy = _snap(loadbalancers__lb=("PENDING_UPDATE", "ONLINE"), listeners__l=("ACTIVE", "ONLINE"))
    assert not reporter.push(busy)
    assert reporter.push(busy, force=True)
    assert sink.sent[-1] == {
        "listeners": [{"id": "l", "provisioning_status": "ACTIVE", "operating_status": "ONLINE"}]
    }
    # ACTIVE again, as before the change: still news, Octavia holds its own PENDING_UPDATE
    assert reporter.push(
        _snap(loadbalancers__lb=("ACTIVE", "ONLINE"), listeners__l=("ACTIVE", "ONLINE"))
    )
    assert sink.sent[-1] == {
        "loadbalancers": [
            {"id": "lb", "provisioning_status": "ACTIVE", "operating_status": "ONLINE"}
        ]
    }
    assert all("PENDING" not in str(sent) for sent in sink.sent)
