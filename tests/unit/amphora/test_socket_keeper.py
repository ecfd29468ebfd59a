"""The access-log socket keeper, a real process with real UNIX sockets: listeners handed
to it outlive their agent, still completing connects (HAProxy's forwarder then waits
instead of spinning), and the next agent takes them back with what was queued."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from lbaas.amphora.access_log import AccessLogs
from lbaas.amphora.held_log_sockets import listen_in_place, refuses
from lbaas.amphora.keeper_client import KeeperClient, attach
from tests.support.keepers import Keepers, stopped_after
from tests.support.waiting import wait_until


@pytest.fixture
def keepers() -> Iterator[Keepers]:
    yield from stopped_after()


def _agent(control: Path) -> KeeperClient:
    client = KeeperClient.connect(control)
    assert client is not None, "no keeper answers"
    return client


def _held_paths(agent: KeeperClient) -> list[Path]:
    """What the keeper holds (the listeners it hands over closed at once)."""
    taken = agent.listeners()
    for listener in taken.values():
        listener.close()
    return sorted(taken)


def _holding(tmp_path: Path, keepers: Keepers, count: int) -> tuple[KeeperClient, list[Path]]:
    """An agent attached to a new keeper holding ``count`` listeners (its own closed)."""
    control = tmp_path / "keeper.sock"
    keepers.start(control)
    agent = _agent(control)
    paths = [tmp_path / f"amp-{i}.sock" for i in range(count)]
    listeners = [listen_in_place(p) for p in paths]
    try:
        agent.hold(zip(paths, listeners, strict=True))
    finally:
        for listener in listeners:
            listener.close()
    return agent, paths


def _read_line(listener: socket.socket) -> bytes:
    """The first line queued in ``listener`` (probes that only connected are skipped)."""
    listener.setblocking(True)
    while True:
        conn, _ = listener.accept()
        with conn:
            if data := conn.recv(4096):
                return data


def test_a_dead_agents_listener_queues_lines_for_the_next_agent(
    tmp_path: Path, keepers: Keepers
) -> None:
    control, path = tmp_path / "keeper.sock", tmp_path / "amp-1.sock"
    keepers.start(control)
    first = _agent(control)
    listener = listen_in_place(path)
    first.hold([(path, listener)])
    listener.close()  # the agent dies: only the keeper's duplicate is left
    first.close()

    assert not refuses(path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as forwarder:
        forwarder.connect(str(path))  # completed by the backlog: nobody accepts
        forwarder.sendall(b"logged while away\n")

    second = _agent(control)
    try:
        taken = second.listeners()
        assert list(taken) == [path]
        assert _read_line(taken[path]) == b"logged while away\n"
        taken[path].close()
        again = second.listeners()  # the keeper keeps its own
        assert list(again) == [path]
        again[path].close()
    finally:
        second.close()


def test_dropped_and_replaced_listeners_are_let_go(tmp_path: Path, keepers: Keepers) -> None:
    agent, paths = _holding(tmp_path, keepers, 3)
    try:
        agent.drop([paths[0]])
        assert refuses(paths[0])  # its last holder let it go
        replacement = listen_in_place(paths[1])  # another listener renamed over it
        paths[2].unlink()  # an amphora deleted behind the keeper's back
        try:
            wait_until(lambda: _held_paths(agent) == [], 10.0, "replaced and gone dropped")
        finally:
            replacement.close()
    finally:
        agent.close()


def test_hundreds_of_listeners_travel_in_batches(tmp_path: Path, keepers: Keepers) -> None:
    agent, paths = _holding(tmp_path, keepers, 260)  # over the 253 of one message
    try:
        assert _held_paths(agent) == sorted(paths)
    finally:
        agent.close()


def test_the_keeper_exits_when_idle_or_when_its_control_path_is_gone(
    tmp_path: Path, keepers: Keepers
) -> None:
    idle = keepers.start(tmp_path / "idle.sock", "--idle-grace", "0.5")
    _agent(tmp_path / "idle.sock").close()  # attached, then gone, holding nothing
    wait_until(lambda: idle.poll() is not None, 20.0, "the idle keeper's exit")
    assert idle.returncode == 0 and not (tmp_path / "idle.sock").exists()

    control, path = tmp_path / "holding.sock", tmp_path / "amp.sock"
    holding = keepers.start(control)
    agent = _agent(control)
    with listen_in_place(path) as listener:
        agent.hold([(path, listener)])
    agent.close()
    control.unlink()  # its state directory removed, say
    wait_until(lambda: holding.poll() is not None, 20.0, "the orphaned keeper's exit")
    assert refuses(path)


def test_access_logs_hand_each_reader_to_the_keeper_and_drop_it_with_its_amphora(
    tmp_path: Path, keepers: Keepers
) -> None:
    control, sockets = tmp_path / "keeper.sock", tmp_path / "sockets"
    sockets.mkdir()
    keepers.start(control)
    logs = AccessLogs(
        tmp_path / "logs", sockets, max_bytes=1 << 20, backups=0, keeper=_agent(control)
    )
    observer = _agent(control)
    try:
        logs.ensure("amp-1", "lb-1", sockets / "amp-1.sock")
        logs.ensure("amp-2", "lb-2", sockets / "amp-2.sock")
        held = observer.listeners()
        assert sorted(held) == [sockets / "amp-1.sock", sockets / "amp-2.sock"]
        for listener in held.values():
            listener.close()
        logs.close("amp-1")  # its amphora deleted
        left = observer.listeners()
        assert list(left) == [sockets / "amp-2.sock"]
        left[sockets / "amp-2.sock"].close()
    finally:
        logs.close_all()
        logs.detach_keeper()
        observer.close()


def test_take_over_listens_in_place_while_the_old_agent_runs(
    tmp_path: Path, keepers: Keepers
) -> None:
    sockets, root = tmp_path / "sockets", tmp_path / "amphorae"
    sockets.mkdir()
    (root / "amp").mkdir(parents=True)
    path = sockets / "amp.sock"
    old = listen_in_place(path)  # an agent of the release before, without a keeper
    established = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        established.connect(str(path))
        old_conn, _ = old.accept()
        control = root / ".log-keeper.sock"
        keepers.start(control, "--take-over", str(sockets), str(root))
        established.sendall(b"to the old agent\n")  # its connection goes on
        assert old_conn.recv(4096) == b"to the old agent\n"
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as fresh:
            fresh.connect(str(path))  # reaches the keeper's listener, not the old one
            fresh.sendall(b"after the take-over\n")
        old.setblocking(False)
        with pytest.raises(BlockingIOError):
            old.accept()
        new_agent = _agent(control)
        try:
            taken = new_agent.listeners()
            assert _read_line(taken[path]) == b"after the take-over\n"
            taken[path].close()
        finally:
            new_agent.close()
        old_conn.close()
    finally:
        established.close()
        old.close()


def test_an_agent_starts_a_keeper_when_none_answers_and_outlives_its_death(
    tmp_path: Path, keepers: Keepers
) -> None:
    control, path = tmp_path / "keeper.sock", tmp_path / "amp.sock"
    started: list[object] = []
    agent = attach(control, lambda: started.append(keepers.start(control)))
    assert agent is not None and len(started) == 1
    again = attach(control, lambda: started.append(keepers.start(control)))
    assert again is not None and len(started) == 1  # the one that answers is used
    again.close()
    with listen_in_place(path) as listener:
        agent.hold([(path, listener)])
        keepers.close()  # the keeper dies under the agent
        agent.hold([(path, listener)])  # logged once; the agent's own logs go on
        agent.drop([path])
        assert agent.listeners() == {}
    agent.close()
