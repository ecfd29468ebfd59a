"""Spare slots on a recording host: made, handed to an amphora, found again, torn down."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.amphora.converger import APPLIED_FILE
from lbaas.amphora.plumbing import namespace_name
from lbaas.amphora.spare_slot import CLAIM_FILE, SPARES_DIRECTORY, SpareSlots
from lbaas.host.base import HaproxyFiles, HostOpsError
from lbaas.host.recording import RecordingHostOps

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
