"""Which starts ``exposure_warning`` refuses, warns about, or lets pass silently."""

from __future__ import annotations

import pytest

from lbaas.config import ApiSettings
from lbaas.errors import ConfigError
from lbaas.identity.exposure import exposure_warning


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.9.10", "::1", "localhost"])
def test_noauth_on_loopback_says_nothing(host: str) -> None:
    assert exposure_warning(ApiSettings(host=host)) is None


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.7", "api.example"])
def test_noauth_beyond_loopback_is_refused_or_warned(host: str) -> None:
    with pytest.raises(ConfigError, match="noauth serves loopback addresses only"):
        exposure_warning(ApiSettings(host=host))
    warning = exposure_warning(ApiSettings(host=host, allow_insecure_noauth=True))
    assert warning is not None and f"noauth on {host}" in warning


@pytest.mark.parametrize("strategy", ["keystone", "keystone_headers"])
def test_validated_identities_may_listen_anywhere(strategy: str) -> None:
    assert exposure_warning(ApiSettings(host="0.0.0.0", auth_strategy=strategy)) is None
