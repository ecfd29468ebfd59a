"""Certificate files on the agent: private, replaced by name, pruned after an apply, and
never shown in a representation or a validation error."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from lbaas.amphora.tls_files import prune_tls_files, write_tls_files
from lbaas.wire.amphora import MAX_TLS_BYTES, AmphoraSpec, TlsFile

KEY = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n"


def test_files_are_private_and_pruned(tmp_path: Path) -> None:
    first = [TlsFile(name="aa.pem", content=KEY), TlsFile(name="bb.crt-list", content="x\n")]
    write_tls_files(tmp_path, first)
    tls = tmp_path / "tls"
    assert tls.stat().st_mode & 0o777 == 0o700
    assert {p.name: p.stat().st_mode & 0o777 for p in tls.iterdir()} == {
        "aa.pem": 0o600,
        "bb.crt-list": 0o600,
    }
    second = [TlsFile(name="cc.pem", content=KEY)]
    write_tls_files(tmp_path, second)
    assert {p.name for p in tls.iterdir()} == {"aa.pem", "bb.crt-list", "cc.pem"}
    prune_tls_files(tmp_path, second)
    assert [p.name for p in tls.iterdir()] == ["cc.pem"]


def test_content_never_shows() -> None:
    item = TlsFile(name="aa.pem", content=KEY)
    assert "PRIVATE" not in repr(item) and "PRIVATE" not in str(item)
    with pytest.raises(ValidationError) as info:
        TlsFile(name="../escape.pem", content=KEY)
    with pytest.raises(ValidationError) as too_long:
        TlsFile(name="aa.pem", content=KEY * (MAX_TLS_BYTES // len(KEY) + 1))
    with pytest.raises(ValidationError) as nested:
        AmphoraSpec.model_validate(
            {
                "spec_format": 2,
                "version": 1,
                "loadbalancer_id": "lb",
                "haproxy_config": "global",
                "haproxy_facts": {"runtime_socket": "s", "fixed_digest": "d"},
                "vip": {"address": "127.0.10.5", "subnet_cidr": "127.0.10.0/24", "network_id": "n"},
                "tls_files": [{"name": "a.pem", "content": KEY * (MAX_TLS_BYTES // len(KEY) + 1)}],
            }
        )
    for error in (info.value, too_long.value, nested.value):
        assert "PRIVATE" not in str(error) and "MIGH" not in str(error)
