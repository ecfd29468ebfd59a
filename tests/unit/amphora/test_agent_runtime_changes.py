"""The agent decides "runtime API or reload" from the facts sent, never from the text."""

from __future__ import annotations

from pathlib import Path

from agent_fakes import make_config

from lbaas.amphora.runtime_changes import ServerChange, runtime_only_changes
from lbaas.wire.amphora import ServerSetting


def test_weight_and_admin_state_changes_are_listed() -> None:
    old = make_config(Path("/a")).facts
    new = make_config(Path("/a"), weight=5, disabled=True).facts
    assert runtime_only_changes(old, new) == [ServerChange("be_p1", "srv_m1", 5, True)]
    assert runtime_only_changes(new, old) == [ServerChange("be_p1", "srv_m1", 1, False)]
    assert runtime_only_changes(old, old) == []


def test_anything_else_is_a_reload() -> None:
    old = make_config(Path("/a")).facts
    assert runtime_only_changes(None, old) is None  # running facts unknown
    assert runtime_only_changes(old, make_config(Path("/a"), timeout_client="9s").facts) is None
    assert runtime_only_changes(old, make_config(Path("/a"), port=9).facts) is None
    renamed = old.model_copy(
        update={
            "servers": (
                old.servers[0],
                ServerSetting(backend="be_p1", server="srv_x", weight=1, disabled=False),
            )
        }
    )
    assert runtime_only_changes(old, renamed) is None
    reordered = old.model_copy(update={"servers": tuple(reversed(old.servers))})
    assert runtime_only_changes(old, reordered) is None
    fewer = old.model_copy(update={"servers": old.servers[:1]})
    assert runtime_only_changes(old, fewer) is None
