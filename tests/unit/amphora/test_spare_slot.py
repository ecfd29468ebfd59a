"""Spare slots on a recording host: made, handed to an amphora, found again, torn down."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.amphora.converger import APPLIED_FILE
from lbaas.amphora.haproxy_process import PLACEHOLDER_DIGEST, ApplyOutcome, HaproxyInstance
from lbaas.amphora.plumbing import namespace_name
from lbaas.amphora.spare_slot import CLAIM_FILE, SPARES_DIRECTORY, SpareSlots
from lbaas.errors import InvalidRenderedConfig
from lbaas.host.base import HaproxyFiles, HaproxyReloadFailed, HostOpsError
from lbaas.host.recording import RecordingHostOps
from lbaas.wire.amphora import HaproxyFacts

PREFIX = "lbt-"


@pytest.fixture
def host() -> RecordingHostOps:
    return RecordingHostOps()


@pytest.fixture
def slots(tmp_path: Path, host: RecordingHostOps) -> SpareSlots:
    return SpareSlots(tmp_path / "amphorae", host, PREFIX)


def test_a_slot_runs_haproxy_in_its_own_namespace(
    slots: SpareSlots, host: RecordingHostOps
) -> None:
    slot = slots.prepare()
    config = slot.directory / "haproxy.cfg"
    assert slot.directory.parent == slots.amphora_root / SPARES_DIRECTORY
    assert slot.namespace.startswith(f"{PREFIX}spare-") and host.namespace_exists(slot.namespace)
    assert host.masters[config] == slot.master_pid
    assert host.master_namespaces[config] == slot.namespace
    assert "bind 127.0.0.1:9" in config.read_text()


def test_a_claim_links_the_amphora_and_renames_the_namespace(
    slots: SpareSlots, host: RecordingHostOps
) -> None:
    slot = slots.prepare()
    slots.claim(slot, "amp-1")
    link = slots.amphora_root / "amp-1"
    assert link.is_symlink() and link.resolve() == slot.directory.resolve()
    assert (slot.directory / CLAIM_FILE).read_text() == "amp-1"
    assert not host.namespace_exists(slot.namespace)
    assert host.namespace_exists(namespace_name("amp-1", PREFIX))
    assert host.masters[slot.directory / "haproxy.cfg"] == slot.master_pid  # not restarted


def test_a_failed_rename_takes_the_link_back(slots: SpareSlots, host: RecordingHostOps) -> None:
    slot = slots.prepare()
    host.create_namespace(namespace_name("amp-1", PREFIX))  # the name is taken
    with pytest.raises(HostOpsError):
        slots.claim(slot, "amp-1")
    assert not (slots.amphora_root / "amp-1").exists()


def test_leftovers_are_the_slots_no_applied_amphora_uses(slots: SpareSlots) -> None:
    unclaimed, half, used = slots.prepare(), slots.prepare(), slots.prepare()
    slots.claim(half, "amp-half")  # the agent died before its configuration was applied
    slots.claim(used, "amp-used")
    (used.directory / APPLIED_FILE).write_text("{}")
    assert slots.leftovers() == sorted([unclaimed.directory, half.directory])


def test_discard_removes_everything_of_a_half_claimed_slot(
    slots: SpareSlots, host: RecordingHostOps
) -> None:
    slot = slots.prepare()
    slots.claim(slot, "amp-1")
    slots.discard(slot.directory)
    assert HaproxyFiles.in_directory(slot.directory).config not in host.masters
    assert not host.namespaces
    assert not (slots.amphora_root / "amp-1").exists()
    assert not (slots.amphora_root / "amp-1").is_symlink()
    assert not slot.directory.exists()
    slots.discard(slot.directory)  # idempotent


def test_a_failed_start_leaves_nothing(tmp_path: Path) -> None:
    def refuse(_text: str) -> None:
        raise HostOpsError("haproxy -c says no")

    host = RecordingHostOps(validator=refuse)
    slots = SpareSlots(tmp_path / "amphorae", host, PREFIX)
    with pytest.raises(HostOpsError):
        slots.prepare()
    assert not host.namespaces
    assert list((tmp_path / "amphorae" / SPARES_DIRECTORY).iterdir()) == []


FACTS = HaproxyFacts(runtime_socket="stats.sock", fixed_digest="sha256:tenant")


def _claimed_instance(slots: SpareSlots, host: RecordingHostOps) -> HaproxyInstance:
    """The HAProxy of amphora amp-1, made from a spare: its files are the slot's (the
    recording host knows a master by its configuration's path, so the slot's path)."""
    slot = slots.prepare()
    slots.claim(slot, "amp-1")
    return HaproxyInstance(slot.directory, host, namespace=namespace_name("amp-1", PREFIX))


def test_the_first_configuration_of_a_spare_is_reloaded_without_a_check(
    slots: SpareSlots, host: RecordingHostOps
) -> None:
    instance = _claimed_instance(slots, host)
    checks = host.count("validate_haproxy_config")
    assert instance.apply("frontend tenant\n", FACTS) == ApplyOutcome.RELOADED
    assert host.count("validate_haproxy_config") == checks
    assert host.count("start_haproxy") == 1  # the spare's own start only
    instance.apply(
        "frontend tenant\n    # changed\n", FACTS.model_copy(update={"fixed_digest": "sha256:2"})
    )
    assert host.count("validate_haproxy_config") == checks + 1  # no placeholder any more


def test_a_refused_first_configuration_is_still_a_refusal(tmp_path: Path) -> None:
    def refuse_tenants(text: str) -> None:
        if "frontend tenant" in text:
            raise InvalidRenderedConfig("HAProxy refused the rendered configuration.", "bad")

    host = RecordingHostOps(validator=refuse_tenants)
    slots = SpareSlots(tmp_path / "amphorae", host, PREFIX)
    instance = _claimed_instance(slots, host)
    host.reload_error = HaproxyReloadFailed("haproxy failed to reload")
    with pytest.raises(InvalidRenderedConfig):
        instance.apply("frontend tenant\n", FACTS)
    assert instance.running_facts is not None
    assert instance.running_facts.fixed_digest == PLACEHOLDER_DIGEST  # the placeholder back


def test_a_failed_reload_of_a_good_configuration_stays_a_reload_failure(
    slots: SpareSlots, host: RecordingHostOps
) -> None:
    instance = _claimed_instance(slots, host)
    host.reload_error = HaproxyReloadFailed("haproxy did not start new workers")
    with pytest.raises(HaproxyReloadFailed):
        instance.apply("frontend tenant\n", FACTS)
