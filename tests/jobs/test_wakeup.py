"""Wakeup sockets: a sender reaches every listening worker, and cleans up after dead ones."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lbaas.jobs.wakeup import WakeupListener, WakeupSender, short_directory, wakeup_directory
from tests.support.wakes import WakeCounter


@contextmanager
def one_listener(directory: Path) -> Iterator[WakeupListener]:
    """A started listener that has been woken once by a sender."""
    counter = WakeCounter()
    listener = WakeupListener(directory, counter)
    sender = WakeupSender(directory)
    try:
        listener.start()
        sender.notify()
        assert counter.wait_beyond(0)
        yield listener
    finally:
        sender.close()
        listener.stop()


def test_every_listener_is_woken_per_notify(tmp_path: Path) -> None:
    directory = wakeup_directory(tmp_path)
    counters = [WakeCounter(), WakeCounter()]
    listeners = [WakeupListener(directory, c) for c in counters]
    sender = WakeupSender(directory)
    try:
        for listener in listeners:
            listener.start()
        sender.notify()
        sender.notify()
        assert all(c.wait_beyond(1) for c in counters)
    finally:
        sender.close()
        for listener in listeners:
            listener.stop()
    # Stopped listeners remove their sockets, and the last one the directory.
    assert not directory.exists()


def test_a_socket_nobody_listens_on_is_removed(tmp_path: Path) -> None:
    directory = wakeup_directory(tmp_path)
    directory.mkdir(parents=True)
    dead = directory / "123-deadbeef.sock"
    # What a SIGKILLed worker leaves behind: a socket file with nobody bound to it.
    orphan = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    with short_directory(directory) as short:
        orphan.bind(f"{short}/{dead.name}")
    orphan.close()
    with one_listener(directory) as listener:
        assert not dead.exists()
        assert listener.path.exists()


def test_no_directory_yet_means_nothing_to_wake(tmp_path: Path) -> None:
    sender = WakeupSender(wakeup_directory(tmp_path / "never-created"))
    sender.notify()  # no worker has started: nothing to do, and no error
    sender.close()
    assert not (tmp_path / "never-created").exists()


def test_a_deep_state_directory_keeps_its_sockets_inside_it(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*["a-rather-long-directory-name"] * 6)
    directory = wakeup_directory(deep)
    assert directory.is_relative_to(deep)  # nothing in a shared /tmp
    assert directory != wakeup_directory(tmp_path / "another")
    with one_listener(directory) as listener:
        assert len(str(listener.path)) > 108  # longer than any sockaddr_un path
        assert listener.path.is_socket()
    assert not directory.exists()
