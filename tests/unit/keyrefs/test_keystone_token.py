"""The Keystone token sent to the operator's Barbican, from a clouds.yaml entry.

No Keystone runs here: keystoneauth's fixed-token plugin (``admin_token``) stands in for a
password login, which exercises the same path (openstacksdk reads the entry, keystoneauth's
session gives the headers) without a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.keyrefs.base import Unresolvable
from lbaas.keyrefs.keystone_token import KeystoneToken

CLOUDS = """\
clouds:
  lbaas-service:
    auth_type: admin_token
    auth:
      endpoint: http://127.0.0.1:9/
      token: service-token-1
"""


def test_the_entrys_token_is_sent_whatever_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "clouds.yaml").write_text(CLOUDS)
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(tmp_path / "clouds.yaml"))
    token = KeystoneToken("lbaas-service")
    assert token("tenant-a") == {"X-Auth-Token": "service-token-1"}
    assert token("tenant-b") == {"X-Auth-Token": "service-token-1"}


def test_a_missing_entry_is_unresolvable_naming_the_error_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "clouds.yaml").write_text(CLOUDS)
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(tmp_path / "clouds.yaml"))
    with pytest.raises(Unresolvable, match="no Keystone token for Barbican"):
        KeystoneToken("not-there")("tenant-a")
