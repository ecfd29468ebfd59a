"""The agent compares a new configuration with what HAProxy loaded, not with a file."""

from __future__ import annotations

from pathlib import Path

import pytest
from agent_fakes import FakeRuntime, make_config

from lbaas.amphora.haproxy_process import (
    LOADED_VARIABLE,
    ApplyOutcome,
    HaproxyInstance,
    agent_section,
)
from lbaas.host.base import HaproxyFiles, HaproxyReloadFailed
from lbaas.host.recording import RecordingHostOps
from lbaas.host.runtime_api import RuntimeApi


class AgentKilled(BaseException):
    """Stands for SIGKILL: the agent process ends where this is raised, tidying nothing."""


class DyingHost(RecordingHostOps):
    """A host whose agent dies at its next reload, after the new file was installed."""

    def __init__(self) -> None:
        super().__init__()
        self.die_at_reload = False
        self.reload_loads = True

    def reload_haproxy(self, files: HaproxyFiles) -> None:
        if self.die_at_reload:
            self.die_at_reload = False
            raise AgentKilled
        if self.reload_loads:
            super().reload_haproxy(files)
        else:  # the master answered but kept running its old configuration
            self.calls.append(("reload_haproxy", (files.config,)))


@pytest.fixture
def host() -> DyingHost:
    return DyingHost()


def _instance(tmp_path: Path, host: DyingHost, runtime: FakeRuntime) -> HaproxyInstance:
    return HaproxyInstance(tmp_path / "amp", host, runtime_api=runtime.factory())


def test_a_file_installed_but_never_loaded_is_reloaded_by_the_retry(
    tmp_path: Path, host: DyingHost, runtime: FakeRuntime
) -> None:
    first = _instance(tmp_path, host, runtime)
    first.apply(*make_config(first.directory))
    new = make_config(first.directory, port=9090)
    host.die_at_reload = True
    with pytest.raises(AgentKilled):
        first.apply(*new)
    assert first.running_config == new.text  # on disk, but HAProxy never loaded it
    # The next agent life (a fresh instance on the same directory) gets the retry.
    second = _instance(tmp_path, host, runtime)
    assert second.running_facts is None  # the stored facts do not describe what runs
    assert second.apply(*new) is ApplyOutcome.RELOADED
    loaded = host.haproxy_loaded_value(second.files, LOADED_VARIABLE)
    assert loaded == new.facts.fixed_digest
    assert second.apply(*new) is ApplyOutcome.UNCHANGED  # and a resync then changes nothing


def test_a_weight_change_after_a_crash_window_is_a_reload_not_a_runtime_change(
    tmp_path: Path, host: DyingHost, runtime: FakeRuntime
) -> None:
    instance = _instance(tmp_path, host, runtime)
    instance.apply(*make_config(instance.directory))
    host.die_at_reload = True
    with pytest.raises(AgentKilled):
        instance.apply(*make_config(instance.directory, port=9090))
    # Differs from the installed file only in a weight, but from what runs in the port.
    outcome = instance.apply(*make_config(instance.directory, port=9090, weight=3))
    assert outcome is ApplyOutcome.RELOADED and runtime.sets() == []


def test_a_reload_that_leaves_the_old_configuration_running_fails(
    tmp_path: Path, host: DyingHost, runtime: FakeRuntime
) -> None:
    instance = _instance(tmp_path, host, runtime)
    old = make_config(instance.directory)
    instance.apply(*old)
    host.reload_loads = False
    with pytest.raises(HaproxyReloadFailed, match="not the configuration just installed"):
        instance.apply(*make_config(instance.directory, port=9090))
    assert instance.running_config == old.text  # the file matches what runs again


def test_killed_during_runtime_changes_the_retry_reloads(
    tmp_path: Path, host: DyingHost, runtime: FakeRuntime
) -> None:
    """Killed between a runtime API change and the install: the stored facts are gone."""

    def dying_runtime(path: Path) -> RuntimeApi:
        def send(command: str) -> str:
            if command.startswith("set server"):
                raise AgentKilled
            return runtime._answer(path, command)

        return RuntimeApi(send)

    instance = HaproxyInstance(tmp_path / "amp", host, runtime_api=dying_runtime)
    instance.apply(*make_config(instance.directory))
    heavier = make_config(instance.directory, weight=4)
    with pytest.raises(AgentKilled):
        instance.apply(*heavier)
    assert instance.running_facts is None
    retry = HaproxyInstance(tmp_path / "amp", host, runtime_api=runtime.factory())
    assert retry.apply(*heavier) is ApplyOutcome.RELOADED
    assert retry.running_facts == heavier.facts


def test_the_agent_section_drops_root_when_the_agent_is_root(
    tmp_path: Path, host: DyingHost, runtime: FakeRuntime
) -> None:
    host.run_as = ("haproxy", "haproxy")
    instance = _instance(tmp_path, host, runtime)
    config = make_config(instance.directory)
    instance.apply(*config)
    installed = instance.files.config.read_text(encoding="utf-8")
    assert installed.startswith(config.text)
    assert installed.endswith("    user haproxy\n    group haproxy\n")
    assert instance.running_config == config.text


def test_an_agent_that_is_not_root_leaves_haproxy_as_it_is() -> None:
    section = agent_section("sha256:ab", None)
    assert "setenv LBAAS_LOADED sha256:ab" in section and "user" not in section
