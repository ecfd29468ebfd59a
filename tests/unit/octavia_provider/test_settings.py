"""The driver's INI file (settings.py): given keys read, the rest defaults."""

from __future__ import annotations

from pathlib import Path

from lbaas_octavia_provider.settings import Settings, load


def test_the_file_sets_what_it_names(tmp_path: Path) -> None:
    path = tmp_path / "lbaas-provider.ini"
    path.write_text(
        "[lbaas]\nurl = http://10.0.0.5:9876/\nretry_seconds = 5\n"
        "vip_fields = subnet, address, port\nstatus_socket = /run/x/status.sock\n"
    )
    got = load(str(path))
    assert got.url == "http://10.0.0.5:9876"
    assert got.retry_seconds == 5.0
    assert got.vip_fields == ("subnet", "address", "port")
    assert got.status_socket == "/run/x/status.sock"
    assert got.poll_interval == Settings().poll_interval


def test_no_file_is_every_default(tmp_path: Path) -> None:
    got = load(str(tmp_path / "absent.ini"))
    assert got.url == Settings().url
    assert got.stats_socket == "/var/run/octavia/stats.sock"  # octavia-lib's default
