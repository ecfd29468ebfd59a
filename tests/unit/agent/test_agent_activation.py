"""Reading systemd's socket-activation variables: only for this process, never passed on."""

from __future__ import annotations

import pytest

from lbaas.agent.activation import inherited_socket
from lbaas.errors import ConfigError


def test_without_the_variables_the_agent_binds_its_own() -> None:
    env = {"PATH": "/usr/bin"}
    assert inherited_socket(env, pid=42) is None
    assert env == {"PATH": "/usr/bin"}


def test_descriptors_meant_for_another_process_are_ignored_and_not_passed_on() -> None:
    env = {"LISTEN_FDS": "1", "LISTEN_PID": "41", "LISTEN_FDNAMES": "agent", "HOME": "/"}
    assert inherited_socket(env, pid=42) is None
    assert env == {"HOME": "/"}  # HAProxy and keepalived, started later, never see them


def test_more_than_one_socket_is_a_configuration_error() -> None:
    env = {"LISTEN_FDS": "2", "LISTEN_PID": "42"}
    with pytest.raises(ConfigError, match="LISTEN_FDS=2"):
        inherited_socket(env, pid=42)
    assert env == {}
