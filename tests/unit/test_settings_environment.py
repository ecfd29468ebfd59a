"""Settings from the environment: the suite's own LBAAS_ variables are not settings, and
any other unknown LBAAS_ variable is refused (a misspelt setting must not go unnoticed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.config import NOT_SETTINGS, load_settings
from lbaas.errors import ConfigError


def test_the_test_tools_variables_are_not_read_as_settings(tmp_path: Path) -> None:
    environ = {name: "/somewhere" for name in NOT_SETTINGS - {"LBAAS_CONFIG"}}
    environ["LBAAS_HEALTH__HOST_STALE_AFTER"] = "4"
    settings = load_settings(environ=environ, overrides={"state_dir": str(tmp_path)})
    assert settings.health.host_stale_after == 4.0


def test_a_misspelt_setting_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="health.host_stale_aftr: Extra inputs"):
        load_settings(
            environ={"LBAAS_HEALTH__HOST_STALE_AFTR": "4"}, overrides={"state_dir": str(tmp_path)}
        )
