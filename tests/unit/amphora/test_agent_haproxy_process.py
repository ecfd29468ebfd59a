"""HaproxyInstance chooses start, nothing, runtime API or reload, and keeps files honest."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from agent_fakes import FakeRuntime, make_config

from lbaas.amphora.haproxy_process import FACTS_FILE, ApplyOutcome, HaproxyInstance
from lbaas.errors import InvalidRenderedConfig
from lbaas.host.base import HaproxyReloadFailed
from lbaas.host.recording import RecordingHostOps


def _refuse_port_1(text: str) -> None:
    if ":1\n" in text:
        raise InvalidRenderedConfig("refused", "[ALERT] port 1 is not allowed")


@pytest.fixture
def host() -> RecordingHostOps:
    return RecordingHostOps(validator=_refuse_port_1)


@pytest.fixture
def instance(tmp_path: Path, host: RecordingHostOps, runtime: FakeRuntime) -> HaproxyInstance:
    return HaproxyInstance(tmp_path / "amp", host, runtime_api=runtime.factory())


def test_first_apply_starts_and_creates_state_file(
    instance: HaproxyInstance, host: RecordingHostOps
) -> None:
    text = make_config(instance.directory)
    assert instance.apply(*text) is ApplyOutcome.STARTED
    assert host.count("validate_haproxy_config") == 1 and host.count("start_haproxy") == 1
    assert instance.running_config == text.text
    assert (instance.directory / "server-state").read_text() == "1\n"
    assert not (instance.directory / "haproxy.cfg.candidate").exists()


def test_same_text_twice_changes_nothing(
    instance: HaproxyInstance, host: RecordingHostOps, runtime: FakeRuntime
) -> None:
    text = make_config(instance.directory)
    instance.apply(*text)
    pid = instance.master_pid()
    assert instance.apply(*text) is ApplyOutcome.UNCHANGED
    assert host.count("start_haproxy") == 1 and host.count("reload_haproxy") == 0
    assert instance.master_pid() == pid and instance.reloads == 0
    assert runtime.sets() == []


def test_weight_and_disabled_go_through_the_runtime_api(
    instance: HaproxyInstance, host: RecordingHostOps, runtime: FakeRuntime
) -> None:
    instance.apply(*make_config(instance.directory))
    new = make_config(instance.directory, weight=9, disabled=True)
    assert instance.apply(*new) is ApplyOutcome.RUNTIME_API
    assert runtime.sets() == [
        "set server be_p1/srv_m1 weight 9",
        "set server be_p1/srv_m1 state maint",
    ]
    assert runtime.commands[0][0] == instance.directory / "stats.sock"
    assert host.count("reload_haproxy") == 0
    assert instance.running_config == new.text  # a later reload keeps the new weight
    assert instance.apply(*make_config(instance.directory, weight=9)) is ApplyOutcome.RUNTIME_API
    assert runtime.sets()[-1] == "set server be_p1/srv_m1 state ready"


def test_refused_runtime_change_falls_back_to_reload(
    instance: HaproxyInstance, host: RecordingHostOps, runtime: FakeRuntime
) -> None:
    instance.apply(*make_config(instance.directory))
    runtime.refuse.add("set server")
    assert instance.apply(*make_config(instance.directory, weight=3)) is ApplyOutcome.RELOADED
    assert host.count("reload_haproxy") == 1


def test_other_changes_reload_after_saving_server_state(
    instance: HaproxyInstance, host: RecordingHostOps, runtime: FakeRuntime
) -> None:
    instance.apply(*make_config(instance.directory))
    new = make_config(instance.directory, timeout_client="10s")
    assert instance.apply(*new) is ApplyOutcome.RELOADED
    assert host.count("reload_haproxy") == 1 and instance.reloads == 1
    assert (instance.directory / "server-state").read_text().startswith("1\n# be_id")
    assert instance.running_config == new.text


def test_refused_config_leaves_the_running_one(
    instance: HaproxyInstance, host: RecordingHostOps
) -> None:
    good = make_config(instance.directory)
    instance.apply(*good)
    with pytest.raises(InvalidRenderedConfig) as refused:
        instance.apply(*make_config(instance.directory, port=1))
    assert "port 1" in (refused.value.operator_message or "")
    assert instance.running_config == good.text
    assert host.count("reload_haproxy") == 0


def test_the_facts_are_installed_with_the_file_and_put_back_with_it(
    instance: HaproxyInstance, host: RecordingHostOps
) -> None:
    good = make_config(instance.directory)
    instance.apply(*good)
    assert instance.running_facts == good.facts
    host.reload_error = HaproxyReloadFailed("no new worker")
    with pytest.raises(HaproxyReloadFailed):
        instance.apply(*make_config(instance.directory, timeout_client="1s", weight=4))
    assert instance.running_facts == good.facts


def test_unknown_running_facts_mean_a_reload_not_the_runtime_api(
    instance: HaproxyInstance, host: RecordingHostOps, runtime: FakeRuntime
) -> None:
    instance.apply(*make_config(instance.directory))
    (instance.directory / FACTS_FILE).unlink()  # as left by an agent that stored none
    assert instance.runtime() is None
    assert instance.apply(*make_config(instance.directory, weight=5)) is ApplyOutcome.RELOADED
    assert runtime.sets() == [] and instance.running_facts is not None


def test_failed_reload_puts_the_previous_file_back(
    instance: HaproxyInstance, host: RecordingHostOps
) -> None:
    good = make_config(instance.directory)
    instance.apply(*good)
    host.reload_error = HaproxyReloadFailed("no new worker")
    with pytest.raises(HaproxyReloadFailed):
        instance.apply(*make_config(instance.directory, timeout_client="1s"))
    assert instance.running_config == good.text


def test_dead_master_is_restarted_from_the_installed_file(
    instance: HaproxyInstance, host: RecordingHostOps
) -> None:
    assert instance.ensure_running() is False  # nothing installed yet
    instance.apply(*make_config(instance.directory))
    assert instance.ensure_running() is False
    host.kill_haproxy(instance.files)
    assert instance.master_pid() is None
    assert instance.ensure_running() is True
    assert instance.master_pid() is not None and instance.restarts == 1


def test_apply_to_a_dead_master_starts_it(
    instance: HaproxyInstance, host: RecordingHostOps
) -> None:
    instance.apply(*make_config(instance.directory))
    host.kill_haproxy(instance.files)
    assert instance.apply(*make_config(instance.directory)) is ApplyOutcome.STARTED
    assert host.count("start_haproxy") == 2


def test_maxconn_beyond_the_hosts_descriptors_is_refused(
    instance: HaproxyInstance, host: RecordingHostOps
) -> None:
    host.fd_limit = 20000
    with pytest.raises(InvalidRenderedConfig) as refused:
        instance.apply(*make_config(instance.directory, maxconn=50000))
    assert "render at most 9950" in (refused.value.operator_message or "")
    assert host.count("start_haproxy") == 0
    fitting = make_config(instance.directory, maxconn=9950)
    assert instance.apply(*fitting) is ApplyOutcome.STARTED


def test_only_a_reload_is_wrapped_in_the_guard_given_the_old_workers_socket(
    instance: HaproxyInstance, host: RecordingHostOps
) -> None:
    events: list[str] = []

    @contextmanager
    def guard(runtime_socket: Path) -> Iterator[None]:
        events.append(f"hold {runtime_socket.name} after {host.count('reload_haproxy')} reloads")
        try:
            yield
        finally:
            events.append(f"release after {host.count('reload_haproxy')} reloads")

    instance.apply(*make_config(instance.directory), guard)  # started: no worker replaced
    instance.apply(*make_config(instance.directory, weight=2), guard)  # runtime API only
    assert events == []
    instance.apply(*make_config(instance.directory, timeout_client="9s"), guard)
    assert events == ["hold stats.sock after 0 reloads", "release after 1 reloads"]
    host.reload_error = HaproxyReloadFailed("no new worker")
    with pytest.raises(HaproxyReloadFailed):
        instance.apply(*make_config(instance.directory, timeout_client="8s"), guard)
    assert events[-2:] == ["hold stats.sock after 1 reloads", "release after 2 reloads"]
