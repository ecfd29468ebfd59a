"""Statistics to health reports: states, and counters that survive reloads exactly."""

from __future__ import annotations

import time
from pathlib import Path

from lbaas.amphora.stats import (
    StatsCollector,
    WorkerLedger,
    listener_state,
    member_state,
)
from lbaas.host.runtime_api import MasterCli, RuntimeApi, RuntimeApiError, Session
from lbaas.model.graph import ListenerId, LoadBalancerId, MemberId, PoolId
from lbaas.model.health import ListenerCounters, ListenerState, MemberState, PoolState


def _frontend(name: str, *, status: str = "OPEN", scur: int = 0, slim: int = 100) -> dict[str, str]:
    row = {"pxname": name, "svname": "FRONTEND", "status": status, "scur": str(scur)}
    row["slim"] = str(slim)
    for key in ("bin", "bout", "stot", "ereq"):
        row[key] = "0"
    return row


def _rows(**counters: int) -> list[dict[str, str]]:
    row = _frontend("fe_l1", scur=2)
    row.update({key: str(value) for key, value in counters.items()})
    return [
        row,
        {"pxname": "be_p1", "svname": "srv_m1", "status": "UP"},
        {"pxname": "be_p1", "svname": "srv_m2", "status": "MAINT"},
        {"pxname": "be_p1", "svname": "BACKEND", "status": "UP"},
        {"pxname": "stats", "svname": "FRONTEND", "status": "OPEN"},
        {"pxname": "be_p2", "svname": "BACKEND", "status": "DOWN"},
    ]


def test_states_are_mapped_from_names_and_status() -> None:
    report = StatsCollector(LoadBalancerId("lb")).report("1", _rows(stot=3))
    assert report.loadbalancer_id == "lb"
    assert set(report.listeners) == {ListenerId("l1")}
    listener = report.listeners[ListenerId("l1")]
    assert listener.state is ListenerState.OPEN
    assert listener.counters.active_connections == 2
    assert report.pools[PoolId("p1")].state is PoolState.UP
    assert report.pools[PoolId("p1")].members == {
        MemberId("m1"): MemberState.UP,
        MemberId("m2"): MemberState.MAINT,
    }
    assert report.pools[PoolId("p2")].state is PoolState.DOWN


def test_listener_states() -> None:
    assert listener_state(_frontend("fe_x", scur=5, slim=10)) is ListenerState.OPEN
    assert listener_state(_frontend("fe_x", scur=10, slim=10)) is ListenerState.FULL
    assert listener_state(_frontend("fe_x", status="FULL")) is ListenerState.FULL
    assert listener_state(_frontend("fe_x", status="STOP")) is ListenerState.DOWN


def test_member_states() -> None:
    expected = {
        "UP": MemberState.UP,
        "UP 1/3": MemberState.UP,
        "DOWN": MemberState.DOWN,
        "DOWN 1/2": MemberState.DOWN,
        "NOLB": MemberState.DRAIN,
        "DRAIN": MemberState.DRAIN,
        "MAINT": MemberState.MAINT,
        "MAINT (via be/x)": MemberState.MAINT,
        "no check": MemberState.NO_CHECK,
    }
    assert {status: member_state(status) for status in expected} == expected


def test_counters_are_carried_over_a_new_worker() -> None:
    collector = StatsCollector(LoadBalancerId("lb"))
    collector.report("1", _rows(bin=100, bout=1000, stot=10, ereq=1, req_tot=30))
    # A reload: the new worker counts from zero.
    report = collector.report("2", _rows(bin=5, bout=50, stot=1, ereq=0, req_tot=2))
    counters = report.listeners[ListenerId("l1")].counters
    assert (counters.bytes_in, counters.bytes_out) == (105, 1050)
    assert (counters.total_connections, counters.request_errors) == (11, 1)
    assert counters.requests == 32  # HAProxy's req_tot, carried over like the others
    later = collector.report("2", _rows(bin=7, bout=70, stot=2, ereq=0, req_tot=3))
    assert later.listeners[ListenerId("l1")].counters.total_connections == 12


def test_counters_going_backwards_count_as_a_new_worker() -> None:
    collector = StatsCollector(LoadBalancerId("lb"))
    collector.report("1", _rows(stot=10))
    report = collector.report("1", _rows(stot=4))
    assert report.listeners[ListenerId("l1")].counters.total_connections == 14


# --- every worker, old and new, read through the master -------------------------------------

STAT_HEADER = "# pxname,svname,scur,slim,stot,bin,bout,ereq,status,"


def _stat_text(stot: int, scur: int = 0) -> str:
    return f"{STAT_HEADER}\nfe_l1,FRONTEND,{scur},100,{stot},{stot * 10},{stot * 100},0,OPEN,\n"


class FakeMaster:
    """A master CLI transport: ``show proc`` and ``@!<pid> show stat`` from ``workers``."""

    def __init__(self) -> None:
        self.master_pid = 1
        self.workers: dict[int, tuple[int, int, int]] = {}  # pid -> (reloads, stot, scur)
        self.up = True

    def __call__(self, command: str) -> str:
        if not self.up:
            raise RuntimeApiError("master.sock: connection refused")
        if command == "show proc; quit":
            lines = [f"{self.master_pid} master 0 [failed: 0] 0d 2.6", "# workers"]
            lines += [f"{pid} worker {w[0]} 0d 2.6" for pid, w in self.workers.items()]
            return "\n".join(lines) + "\n"
        pid = int(command.split()[0].removeprefix("@!"))
        if pid not in self.workers:
            return f"Can't find the target PID matching the prefix '@!{pid}'\n"
        _reloads, stot, scur = self.workers[pid]
        return _stat_text(stot, scur)


def _counted(collector: StatsCollector, master: FakeMaster) -> tuple[int, int]:
    api = RuntimeApi(lambda command: "")  # never used while the master answers
    listener = collector.collect(api, MasterCli(master)).listeners[ListenerId("l1")]
    return listener.counters.total_connections, listener.counters.active_connections


def test_old_and_new_workers_are_summed_until_an_old_one_is_gone() -> None:
    master, collector = FakeMaster(), StatsCollector(LoadBalancerId("lb"))
    master.workers = {10: (0, 5, 0)}
    assert _counted(collector, master) == (5, 0)
    # A reload: 10 drains (it counted 3 more meanwhile), 11 is the current worker.
    master.workers = {11: (0, 2, 1), 10: (1, 8, 2)}
    assert _counted(collector, master) == (10, 3)
    # 10 has exited: its last values are carried, nothing is lost or counted twice.
    master.workers = {11: (0, 4, 0)}
    assert _counted(collector, master) == (12, 0)
    assert collector._ledger.live_pids == {11}


def test_an_old_worker_gone_between_show_proc_and_its_read_keeps_its_last_values() -> None:
    master, collector = FakeMaster(), StatsCollector(LoadBalancerId("lb"))
    master.workers = {10: (0, 5, 0)}
    _counted(collector, master)
    master.workers = {11: (0, 1, 0), 10: (1, 6, 0)}
    _counted(collector, master)

    class Vanishing(FakeMaster):
        def __call__(self, command: str) -> str:
            return "no such pid\n" if command.startswith("@!10 ") else super().__call__(command)

    vanishing = Vanishing()
    vanishing.workers = {11: (0, 2, 0), 10: (1, 7, 0)}
    assert _counted(collector, vanishing) == (8, 0)


def test_a_new_master_brings_new_pids_and_the_old_counts_are_kept() -> None:
    master, collector = FakeMaster(), StatsCollector(LoadBalancerId("lb"))
    master.workers = {10: (0, 7, 0)}
    _counted(collector, master)
    master.master_pid, master.workers = 50, {51: (0, 1, 0)}
    assert _counted(collector, master) == (8, 0)
    assert collector._ledger.live_pids == {51}


def test_a_reused_pid_whose_counters_dropped_is_a_new_process() -> None:
    master, collector = FakeMaster(), StatsCollector(LoadBalancerId("lb"))
    master.workers = {10: (0, 7, 0)}
    _counted(collector, master)
    master.workers = {10: (0, 2, 0)}  # e.g. a restarted master whose worker got pid 10 again
    assert _counted(collector, master) == (9, 0)
    master.workers = {10: (0, 3, 0)}
    assert _counted(collector, master) == (10, 0)


def test_without_the_master_the_current_worker_is_read_through_the_runtime_api() -> None:
    master, collector = FakeMaster(), StatsCollector(LoadBalancerId("lb"))
    master.workers = {10: (0, 7, 0)}
    _counted(collector, master)
    master.up = False  # re-executing for a reload; the runtime socket answers meanwhile

    def runtime(command: str) -> str:
        return "Pid: 11\n" if command == "show info" else _stat_text(2)

    report = collector.collect(RuntimeApi(runtime), MasterCli(master))
    assert report.listeners[ListenerId("l1")].counters.total_connections == 9


def cumulative(bytes_in: int, bytes_out: int, connections: int, errors: int) -> ListenerCounters:
    """What a worker counted so far (the ledger holds no gauge)."""
    return ListenerCounters(
        bytes_in=bytes_in,
        bytes_out=bytes_out,
        total_connections=connections,
        request_errors=errors,
    )


def test_the_ledger_totals_are_the_carry_plus_every_live_worker() -> None:
    ledger = WorkerLedger()
    l1 = ListenerId("l1")
    ledger.observe(1, {l1: cumulative(10, 100, 1, 0)})
    ledger.observe(2, {l1: cumulative(5, 50, 1, 1)})
    assert ledger.totals()[l1] == cumulative(15, 150, 2, 1)
    ledger.retire_absent({2})
    ledger.observe(2, {l1: cumulative(6, 60, 2, 1)})
    assert ledger.totals()[l1] == cumulative(16, 160, 3, 1)
    assert ledger.live_pids == {2}


# --- a replaced worker held through its reload and read to its end -------------------------


class HeldWorker:
    """A ``Session`` to one worker: it stops after ``stop_after`` reads, then drains."""

    def __init__(self, pid: int = 10, stop_after: int = 1, drained_after: int = 2) -> None:
        self.pid, self.reads, self.closed = pid, 0, False
        self.stop_after, self.drained_after = stop_after, drained_after
        self.stot = 5

    def __call__(self, command: str) -> str:
        if self.closed:
            raise RuntimeApiError("closed")
        if command == "show info":
            self.reads += 1
            self.stot += 1  # it accepted one more connection since the last read
            stopping = int(self.reads > self.stop_after)
            return f"Pid: {self.pid}\nStopping: {stopping}\n"
        return _stat_text(self.stot, scur=int(self.reads <= self.drained_after))

    def close(self) -> None:
        self.closed = True


def test_a_held_worker_is_read_until_it_stopped_and_drained_then_released() -> None:
    collector = StatsCollector(LoadBalancerId("lb"))
    held = HeldWorker(stop_after=1, drained_after=3)
    collector.drain(held)
    assert held.closed and held.reads == 4
    assert collector._ledger.totals()[ListenerId("l1")].total_connections == 9


def test_the_hold_is_released_at_its_limit_and_on_errors() -> None:
    collector = StatsCollector(LoadBalancerId("lb"))
    never_stops = HeldWorker(stop_after=10**6)
    collector.drain(never_stops, limit=0.0)
    assert never_stops.closed and never_stops.reads == 1

    class Broken(HeldWorker):
        def __call__(self, command: str) -> str:
            raise RuntimeApiError("the worker went away")

    broken = Broken()
    collector.drain(broken)
    assert broken.closed


def test_across_reload_hands_the_held_worker_to_a_drain() -> None:
    held = HeldWorker(pid=10)
    opened: list[Path] = []

    def open_session(path: Path) -> Session:
        opened.append(path)
        return held

    collector = StatsCollector(LoadBalancerId("lb"), open_session)
    with collector.across_reload(Path("/run/amp/stats.sock")):
        assert held.reads == 0  # held while the master reloads, read only after
    deadline = time.monotonic() + 5
    while not held.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert opened == [Path("/run/amp/stats.sock")] and held.closed
    assert collector._ledger.live_pids == {10}


def test_a_worker_that_cannot_be_held_does_not_stop_the_reload() -> None:
    def refuse(path: Path) -> Session:
        raise RuntimeApiError(f"{path}: connection refused")

    reloaded = False
    with StatsCollector(LoadBalancerId("lb"), refuse).across_reload(Path("/x/stats.sock")):
        reloaded = True
    assert reloaded


def _server(name: str, pool: str = "be_p1", **counters: int) -> dict[str, str]:
    row = {"pxname": pool, "svname": name, "status": "UP"}
    row.update({key: str(value) for key, value in counters.items()})
    return row


def test_pool_and_member_traffic_is_counted_and_survives_a_reload() -> None:
    collector = StatsCollector(LoadBalancerId("lb"))

    def worker(**m1: int) -> list[dict[str, str]]:
        backend = {key: str(value) for key, value in m1.items() if key != "chkfail"}
        return [
            _frontend("fe_l1"),
            _server("srv_m1", **m1),
            _server("srv_m2", chkfail=1),
            {"pxname": "be_p1", "svname": "BACKEND", "status": "UP", **backend},
        ]

    first = worker(bin=10, bout=20, stot=2, scur=1, econ=1, eresp=2, req_tot=2, chkfail=3)
    report = collector.report("100", first)
    pool = report.pools[PoolId("p1")]
    m1 = pool.member_counters[MemberId("m1")]
    assert (m1.bytes_in, m1.bytes_out, m1.total_connections, m1.requests) == (10, 20, 2, 2)
    assert (m1.active_connections, m1.request_errors, m1.check_failures) == (1, 3, 3)
    assert pool.counters is not None
    assert pool.counters.bytes_in == 10 and pool.counters.check_failures == 4  # 3 + 1
    # A reload: the new worker counts from zero; the old one's counts are carried.
    report = collector.report("200", worker(bin=5, stot=1), {100: first})
    m1 = report.pools[PoolId("p1")].member_counters[MemberId("m1")]
    assert (m1.bytes_in, m1.total_connections, m1.check_failures) == (15, 3, 3)


def test_the_extra_read_comes_last_before_the_worker_is_let_go() -> None:
    collector = StatsCollector(LoadBalancerId("lb"))
    held = HeldWorker(stop_after=1, drained_after=3)
    seen: list[tuple[int, bool, int]] = []
    collector.drain(held, extra_read=lambda api, pid: seen.append((pid, held.closed, held.reads)))
    assert seen == [(10, False, 4)] and held.closed  # after the final read, still held

    never_stops = HeldWorker(pid=11, stop_after=10**6)
    collector.drain(never_stops, 0.0, lambda api, pid: seen.append((pid, False, 0)))
    assert seen[-1] == (11, False, 0) and never_stops.closed  # also when let go at the limit
