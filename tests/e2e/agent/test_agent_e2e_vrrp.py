"""ACTIVE_STANDBY for real: two amphora namespaces with keepalived and HAProxy, one VIP.

Needs root. ``tests.support.vrrp_pair`` builds the pair with a real ``AmphoraRegistry``
(netns mode, ``KeepalivedLauncher``), HAProxy rendered with the pair's ``peers`` and
SOURCE_IP persistence, and two real backends. The tests kill or stop the MASTER's
processes while a client loops requests through the VIP and check who holds the VIP and
what the client saw. Timings are printed (``-s``) and measured by ``bench/failover.py``;
nothing here asserts on them.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbaas.model.enums import AmphoraRole
from tests.support.vrrp_pair import LoopingClient, VrrpPair, _children_of, _pid_in, fetch
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.root, pytest.mark.haproxy, pytest.mark.slow]


@pytest.fixture
def pair(short_dir: Path) -> Iterator[VrrpPair]:
    if os.geteuid() != 0:
        pytest.skip("netns mode needs root")
    built = VrrpPair(short_dir)
    try:
        built.start()
        wait_until(lambda: len(built.holders()) == 1, timeout=30, what="one VIP holder")
        yield built
    finally:
        built.close()


def _roles(pair: VrrpPair) -> tuple[str, str]:
    (master,) = pair.holders()
    (backup,) = [a for a in pair.live() if a != master]
    wait_until(lambda: pair.entered(backup, AmphoraRole.BACKUP) > 0, timeout=30, what="a BACKUP")
    return master, backup


def test_the_pair_elects_the_higher_priority_and_serves_the_vip(pair: VrrpPair) -> None:
    master, backup = _roles(pair)
    assert pair.roles[master] is AmphoraRole.MASTER and pair.roles[backup] is AmphoraRole.BACKUP
    bodies = {fetch(pair.vip, 8080, 5) for _ in range(4)}
    # SOURCE_IP persistence: one client address, one member.
    assert len(bodies) == 1 and bodies <= {"backend-b1", "backend-b2"}
    for amphora_id in pair.live():
        status = pair.manager.get(amphora_id)
        assert status is not None and status.running and status.keepalived_pid is not None
        assert status.vrrp_interface is not None
    # keepalived's notify script tells the agent who holds the VIP (announced to the API).
    wait_until(
        lambda: pair.manager.vrrp_states() == {master: "MASTER", backup: "BACKUP"},
        timeout=30,
        what="the VRRP states the agent reports",
    )


def test_master_killed_the_backup_takes_over_and_keeps_the_member(pair: VrrpPair) -> None:
    master, backup = _roles(pair)
    with LoopingClient(pair.vip) as client:
        wait_until(lambda: client.served_after(time.monotonic() - 1) is not None, timeout=10)
        time.sleep(0.5)  # the stick table entry reaches the BACKUP's HAProxy
        before = client.served_after(time.monotonic() - 0.5)
        killed = pair.kill(master)
        wait_until(lambda: backup in pair.holders(), timeout=30, what="the VIP on the BACKUP")
        wait_until(lambda: client.served_after(killed) is not None, timeout=30, what="service")
        served = client.served_after(killed)
    assert before is not None and served is not None
    print(
        f"takeover {served.ended - killed:.3f}s, longest gap {client.longest_gap():.3f}s, "
        f"failed requests {client.failed_between(killed, served.started)}"
    )
    assert served.body == before.body  # the BACKUP's HAProxy knew the client's member
    assert pair.entered(backup, AmphoraRole.MASTER) == 1
    # The killed keepalived is not reported; the survivor reports MASTER once its notify
    # script (forked by keepalived after it logs the transition) has written the state.
    wait_until(
        lambda: pair.manager.vrrp_states() == {backup: "MASTER"},
        timeout=10,
        what="the survivor's notify script to report MASTER",
    )

    # The agent's supervisor brings the dead processes back; keepalived starts by removing
    # the VIP, and nopreempt keeps the new MASTER in place.
    assert master in pair.manager.supervise()
    wait_until(lambda: pair.holders() == [backup], timeout=30, what="the VIP on one amphora")
    time.sleep(1)
    assert pair.holders() == [backup]
    assert fetch(pair.vip, 8080, 5) == before.body
    wait_until(
        lambda: pair.manager.vrrp_states() == {master: "BACKUP", backup: "MASTER"},
        timeout=30,
        what="the restarted keepalived reporting BACKUP",
    )


def test_a_hung_haproxy_gives_the_vip_up(pair: VrrpPair) -> None:
    master, backup = _roles(pair)
    haproxy = _pid_in(pair.manager.root / master / "haproxy.pid")
    assert haproxy is not None
    stopped = [haproxy, *_children_of(haproxy)]
    for pid in stopped:
        os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: pair.holders() == [backup], timeout=30, what="the VIP moved")
        assert fetch(pair.vip, 8080, 5) in ("backend-b1", "backend-b2")
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)


def test_replacing_the_failed_amphora_keeps_the_vip_serving(pair: VrrpPair) -> None:
    master, backup = _roles(pair)
    pair.kill(master)
    wait_until(lambda: backup in pair.holders(), timeout=30, what="takeover")
    # As the agent's supervisor does: the dead amphora's keepalived comes back as BACKUP.
    pair.manager.supervise()
    wait_until(lambda: pair.holders() == [backup], timeout=30, what="one VIP holder")
    # A patient client: the survivor reloads HAProxy (its peer changes), which may delay
    # an answer on a loaded machine but must not lose one.
    with LoopingClient(pair.vip, timeout=3.0) as client:
        wait_until(lambda: client.served_after(time.monotonic() - 1) is not None, timeout=10)
        started = time.monotonic()
        new = pair.replace(master)
        wait_until(lambda: pair.entered(new, AmphoraRole.BACKUP) > 0, timeout=30, what="new BACKUP")
        time.sleep(1)
        ended = time.monotonic()
    assert pair.holders() == [backup]
    # The survivor's keepalived took its new configuration (peer, priority) by a reload
    # and never left MASTER meanwhile.
    assert pair.entered(backup, AmphoraRole.MASTER) == 1
    assert pair.entered(backup, AmphoraRole.BACKUP) == 1
    assert pair.roles == {backup: AmphoraRole.MASTER, new: AmphoraRole.BACKUP}
    assert client.failed_between(started, ended) == 0
    assert client.served_after(ended - 0.5) is not None
