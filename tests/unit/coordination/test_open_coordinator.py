"""``[coordination]`` opens the engine it names, and refuses settings that name none."""

from __future__ import annotations

import pytest

from lbaas.config import CoordinationSettings
from lbaas.coordination.embedded import EmbeddedCoordinator
from lbaas.coordination.engines import open_coordinator
from lbaas.coordination.etcd import EtcdCoordinator
from lbaas.coordination.postgres import PostgresCoordinator


def test_each_engine_is_opened_from_its_settings() -> None:
    assert isinstance(open_coordinator(CoordinationSettings()), EmbeddedCoordinator)
    postgres = CoordinationSettings(engine="postgresql")
    # No URL of its own: the control plane's database.
    opened = open_coordinator(postgres, "postgresql+psycopg://lbaas@db.example/lbaas")
    assert isinstance(opened, PostgresCoordinator)
    etcd = CoordinationSettings(engine="etcd", url="http://127.0.0.1:2379")
    assert isinstance(open_coordinator(etcd), EtcdCoordinator)


def test_settings_that_name_no_usable_engine_are_refused() -> None:
    with pytest.raises(ValueError, match="PostgreSQL URL"):
        open_coordinator(CoordinationSettings(engine="postgresql"), "sqlite:///x.sqlite")
    with pytest.raises(ValueError, match="http"):
        open_coordinator(CoordinationSettings(engine="etcd"))
    with pytest.raises(ValueError):
        CoordinationSettings(engine="zookeeper")  # type: ignore[arg-type]
