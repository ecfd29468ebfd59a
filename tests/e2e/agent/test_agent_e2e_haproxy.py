"""A real HAProxy managed by the agent on 127.0.0.0/8, in front of real Python backends."""

from __future__ import annotations

import http.client
import os
import signal
import threading
from pathlib import Path

import pytest
from agent_e2e_support import (
    LISTENER,
    POOL,
    Backend,
    LoopingClient,
    Server,
    free_port,
    haproxy_config,
    http_get,
    random_loopback,
    report_of,
)

from lbaas.amphora.registry import AmphoraRegistry
from lbaas.errors import InvalidRenderedConfig
from lbaas.host.base import HaproxyFiles
from lbaas.host.loopback import LoopbackHostOps
from lbaas.host.runtime_api import MasterCli, ProcTable, RuntimeApi
from lbaas.model.graph import MemberId
from lbaas.render.haproxy.names import backend_name, server_name
from lbaas.wire.amphora import AmphoraSpec, AmphoraStatus, VipSpec
from tests.support.waiting import wait_until

pytestmark = pytest.mark.haproxy
AMPHORA = "amp-e2e"


class Lb:
    """One amphora under test: its VIP, port, servers and the specs sent for it."""

    def __init__(
        self, manager: AmphoraRegistry, backends: list[Backend], amphora_id: str = AMPHORA
    ) -> None:
        self.manager = manager
        self.amphora_id = amphora_id
        self.vip = random_loopback()
        self.port = free_port(self.vip)
        self.dir = manager.root / amphora_id
        self.servers = [Server(f"m{i}", b.address, b.port) for i, b in enumerate(backends)]
        self.version = 0

    def put(
        self, servers: list[Server] | None = None, frontend_lines: tuple[str, ...] = ()
    ) -> AmphoraStatus:
        self.version += 1
        config = haproxy_config(
            self.dir, self.vip, self.port, servers or self.servers, frontend_lines=frontend_lines
        )
        spec = AmphoraSpec(
            version=self.version,
            loadbalancer_id="lb-e2e",
            **config,
            vip=VipSpec(address=self.vip, subnet_cidr=f"{self.vip}/8", network_id="lo"),
        )
        return self.manager.put(self.amphora_id, spec)

    def master(self) -> MasterCli:
        return MasterCli.at(self.dir / "master.sock")

    def runtime(self) -> RuntimeApi:
        return RuntimeApi.at(self.dir / "stats.sock")

    def get(self, path: str = "/") -> str:
        return http_get(self.vip, self.port, path)


@pytest.fixture
def lb(manager: AmphoraRegistry, backends: list[Backend]) -> Lb:
    return Lb(manager, backends)


def test_traffic_flows_and_a_repeated_put_changes_nothing(lb: Lb) -> None:
    first = lb.put()
    assert first.last_outcome == "STARTED" and first.master_pid is not None
    assert {lb.get() for _ in range(6)} == {"backend-a", "backend-b"}
    reloads = lb.master().show_proc().master.reloads
    lb.version -= 1  # the very same spec again
    second = lb.put()
    assert second.last_outcome == "UNCHANGED"
    assert second.master_pid == first.master_pid and second.reloads == 0
    assert lb.master().show_proc().master.reloads == reloads


def test_weight_change_goes_through_the_runtime_api(lb: Lb) -> None:
    lb.put()
    before = lb.master().show_proc()
    heavier = [lb.servers[0], Server(lb.servers[1].member_id, "127.0.0.1", lb.servers[1].port, 0)]
    status = lb.put(heavier)
    assert status.last_outcome == "RUNTIME_API" and status.reloads == 0
    after = lb.master().show_proc()
    assert after.master.reloads == before.master.reloads
    assert [w.pid for w in after.workers] == [w.pid for w in before.workers]
    rows = {r["svname"]: r for r in lb.runtime().show_stat() if r["pxname"] == backend_name(POOL)}
    assert rows[server_name(MemberId(lb.servers[1].member_id))]["weight"] == "0"
    assert {lb.get() for _ in range(6)} == {"backend-a"}


def test_reload_drops_nothing_under_a_looping_client(lb: Lb) -> None:
    lb.put()
    slow: list[str] = []

    def slow_request() -> None:
        try:
            slow.append(lb.get("/slow/3"))
        except (OSError, http.client.HTTPException, AssertionError) as exc:
            slow.append(f"failed: {exc!r}")

    in_flight = threading.Thread(target=slow_request, daemon=True)
    with LoopingClient(lb.vip, lb.port) as client:
        wait_until(lambda: client.ok > 20, what="requests before the reloads")
        in_flight.start()
        for n in range(5):
            status = lb.put(frontend_lines=(f"http-response set-header X-Reload {n}",))
            assert status.last_outcome == "RELOADED"
            _wait_for_more(client, 10)
    in_flight.join(30)
    assert status.reloads == 5
    assert client.errors == []
    assert slow == ["backend-a"] or slow == ["backend-b"]  # the established connection lived


def test_the_master_is_never_taken_for_dead_while_it_re_executes(
    lb: Lb, host_ops: LoopbackHostOps
) -> None:
    # A reloading master calls exec() and rewrites its pid file; for a moment the file and
    # its /proc command line read empty. The agent must not take that moment for a dead
    # master (it used to fail a reload).
    lb.put()
    files = HaproxyFiles.in_directory(lb.dir)
    misses: list[int] = []
    polls = 0
    stop = threading.Event()

    def poll() -> None:
        nonlocal polls
        while not stop.is_set():
            polls += 1
            if host_ops.haproxy_master_pid(files) is None:
                misses.append(polls)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        for n in range(12):
            assert lb.put(frontend_lines=(f"http-response set-header X-N {n}",)).last_outcome == (
                "RELOADED"
            )
    finally:
        stop.set()
        watcher.join(10)
    assert polls > 100 and misses == []


def test_a_hung_haproxy_holds_one_stats_thread_not_one_per_heartbeat(
    short_dir: Path, host_ops: LoopbackHostOps, backends: list[Backend]
) -> None:
    # Two threads: were every heartbeat to start another read of the hung amphora, the
    # second one would already leave no thread for the healthy amphora.
    manager = AmphoraRegistry(short_dir / "two", host_ops, stats_threads=2)
    hung, healthy = Lb(manager, backends, "amp-hung"), Lb(manager, backends, "amp-ok")
    stopped: list[int] = []
    try:
        hung.put()
        healthy.put()
        stopped = _process_tree(hung.master().show_proc())
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        rounds = [[amphora for amphora, _ in manager.health_reports()] for _ in range(5)]
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        for amphora_id in manager.amphora_ids():
            manager.delete(amphora_id)
    # Without the guard only the first round reports amp-ok; one round may miss the
    # deadline on a busy machine.
    assert all(r in ([], ["amp-ok"]) for r in rounds), rounds
    assert rounds.count(["amp-ok"]) >= 4, rounds


def test_killed_haproxy_is_restarted_by_supervise(lb: Lb) -> None:
    status = lb.put()
    assert status.master_pid is not None
    os.kill(status.master_pid, signal.SIGKILL)
    wait_until(lambda: not _running(lb), what="haproxy to die")
    assert lb.manager.supervise() == [AMPHORA]
    restarted = lb.manager.get(AMPHORA)
    assert restarted is not None and restarted.running and restarted.restarts == 1
    assert restarted.master_pid != status.master_pid
    wait_until(lambda: _answers(lb), what="traffic after the restart")


def _wait_for_more(client: LoopingClient, count: int) -> None:
    target = client.ok + count
    wait_until(lambda: client.ok > target, what="requests after a reload")


def _running(lb: Lb) -> bool:
    status = lb.manager.get(AMPHORA)
    return status is not None and status.running


def _answers(lb: Lb) -> bool:
    try:
        return lb.get() in ("backend-a", "backend-b")
    except OSError:
        return False


def test_counters_survive_a_reload(lb: Lb) -> None:
    lb.put()
    for _ in range(7):
        lb.get()
    before = report_of(lb.manager, lb.amphora_id)
    assert before.listeners[LISTENER].counters.total_connections == 7
    assert lb.put(frontend_lines=("http-response set-header X-New 1",)).last_outcome == "RELOADED"
    for _ in range(3):
        lb.get()
    after = report_of(lb.manager, lb.amphora_id)
    counters = after.listeners[LISTENER].counters
    assert counters.total_connections == 10
    assert counters.bytes_in > before.listeners[LISTENER].counters.bytes_in
    assert after.pools[POOL].members  # every member reported


def test_a_replaced_worker_is_read_to_its_end(lb: Lb) -> None:
    """What the old worker serves after the reload is counted, though it then exits at once."""
    keep_alive = "option idle-close-on-response"  # as rendered: answer, then close
    lb.put(frontend_lines=(keep_alive,))
    kept = http.client.HTTPConnection(lb.vip, lb.port, timeout=10)
    try:
        kept.request("GET", "/")
        kept.getresponse().read()
        before = report_of(lb.manager, lb.amphora_id)
        reloaded = lb.put(frontend_lines=(keep_alive, "http-response set-header X-New 1"))
        assert reloaded.last_outcome == "RELOADED"
        # The old worker serves this request on its established connection, and exits
        # as soon as that connection is closed: no heartbeat reads it in between.
        kept.request("GET", "/")
        kept.getresponse().read()
    finally:
        kept.close()
    wait_until(lambda: len(lb.master().show_proc().workers) == 1, what="the old worker to exit")
    after = report_of(lb.manager, lb.amphora_id)
    first, total = before.listeners[LISTENER].counters, after.listeners[LISTENER].counters
    assert (first.total_connections, total.total_connections) == (1, 1)
    assert total.bytes_in == 2 * first.bytes_in > 0
    assert total.bytes_out > first.bytes_out


def test_refused_config_keeps_the_old_one_serving(lb: Lb) -> None:
    lb.put()
    with pytest.raises(InvalidRenderedConfig) as refused:
        lb.put(frontend_lines=("no-such-keyword here",))
    assert "no-such-keyword" in (refused.value.operator_message or "")
    assert lb.get() in ("backend-a", "backend-b")
    status = lb.manager.get(AMPHORA)
    assert status is not None and status.last_error and status.reloads == 0


def test_delete_stops_haproxy_and_removes_files(lb: Lb, short_dir: Path) -> None:
    pid = lb.put().master_pid
    lb.manager.delete(AMPHORA)
    assert not lb.dir.exists()
    assert pid is not None and not _alive(pid)
    with pytest.raises(OSError):
        lb.get()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def _process_tree(table: ProcTable) -> list[int]:
    """The master and every worker of an HAProxy, as its master CLI lists them."""
    return [table.master.pid, *(w.pid for w in table.workers)]
