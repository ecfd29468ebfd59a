"""Providers are loaded from entry points and checked at start-up."""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.config import load_settings
from lbaas.errors import ConfigError
from lbaas.model import enums as E
from lbaas.providers.base import ProviderContext
from lbaas.providers.registry import ProviderRegistry, build_registry, load_providers


def _context(tmp_path: Path) -> ProviderContext:
    return ProviderContext(
        settings=load_settings(environ={}, overrides={"state_dir": str(tmp_path)})
    )


def test_unknown_enabled_provider_stops_start_up_naming_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_providers(["noop", "bogus"], _context(tmp_path))
    message = str(err.value)
    assert "provider 'bogus' is enabled but no 'lbaas.providers' entry point" in message
    assert "remove it from providers.enabled" in message


def test_default_must_be_enabled(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="default provider 'amphora' is not enabled"):
        build_registry(["noop"], "amphora", _context(tmp_path))


def test_noop_loads_with_capabilities_and_octavia_alias_needs_amphora(tmp_path: Path) -> None:
    registry = build_registry(["noop"], "noop", _context(tmp_path))
    assert isinstance(registry, ProviderRegistry)
    assert E.ListenerProtocol.UDP in registry.capabilities("noop").listener_protocols
    assert registry.resolve("octavia") is None
    assert [name for name, _ in registry.listed()] == ["noop"]


def test_amphora_declares_tls_termination_but_no_udp_or_sctp(tmp_path: Path) -> None:
    from lbaas.db.engine import Database

    database = Database(f"sqlite:///{tmp_path / 'db.sqlite'}")
    context = ProviderContext(settings=_context(tmp_path).settings, database=database)
    registry = build_registry(["amphora", "noop"], "amphora", context)
    try:
        caps = registry.capabilities("octavia")
        assert registry.resolve("octavia") == "amphora"
        assert E.ListenerProtocol.TERMINATED_HTTPS in caps.listener_protocols
        for protocol in ("UDP", "SCTP"):
            assert E.ListenerProtocol(protocol) not in caps.listener_protocols
    finally:
        registry.close()
        database.dispose()
