"""``lbaas tier watch``'s sweep and reconcile over a real SQLite lease store, a fake clock,
a fake health check and a router that records (and can refuse) its ``birdc`` commands."""

from __future__ import annotations

from pathlib import Path

from lbaas.config import TierSettings
from lbaas.tier.host.bird import BirdCommandFailed, BirdControl
from lbaas.tier.lease_store import SqliteLeaseStore
from lbaas.tier.watch_service import TierWatch


class FakeRouter(BirdControl):
    def __init__(self) -> None:
        super().__init__(Path("/nonexistent/bird.ctl"))
        self.commands: list[tuple[str, ...]] = []
        self.refuse_next = False

    def command(self, *words: str) -> str:
        if self.refuse_next:
            self.refuse_next = False
            raise BirdCommandFailed(["birdc", *words], "Unable to connect")
        self.commands.append(words)
        return "0000 \n"

    def bgp_sessions(self) -> dict[str, str]:
        return {"h1": "up Established", "h2": "up Established"}

    def prefixes(self, protocol: str) -> list[str]:
        return ["10.1.0.200/32"]


def test_withdraw_only_after_expiry_and_a_failed_health_port_and_retry_refused_commands(
    tmp_path: Path,
) -> None:
    store_path = tmp_path / "leases.sqlite"
    store = SqliteLeaseStore(store_path)
    store.create()
    settings = TierSettings(
        nodes={"h1": "127.0.0.1:1", "h2": "127.0.0.1:2"},
        lease_store=str(store_path),
        router_bird_socket="/nonexistent/bird.ctl",
    )
    now = [100.0]
    answering = {"h1": True, "h2": True}
    router = FakeRouter()
    watch = TierWatch(settings, router=router, health=answering.__getitem__, clock=lambda: now[0])

    watch.reconcile()  # a watcher that starts enables every node it does not hold down
    assert router.commands == [("enable", "h1"), ("enable", "h2")]
    for node in ("h1", "h2"):
        store.renew(node)
    now[0] += 0.3
    watch.sweep()
    assert len(router.commands) == 2

    # The store gone: every lease expires, every health port answers, nothing is withdrawn.
    store_path.rename(tmp_path / "away")
    now[0] += 2.0
    watch.sweep()
    assert len(router.commands) == 2 and watch.status()["lease_store"] == "unavailable"
    (tmp_path / "away").rename(store_path)

    # h2 stops renewing and its health port fails: withdrawn; h1 renews and stays.
    answering["h2"] = False
    store.renew("h1")
    now[0] += 2.0
    watch.sweep()
    assert router.commands[2:] == [("disable", "h2")]
    shown = watch.status()["nodes"]
    assert shown["h2"]["down"] is True and shown["h1"]["down"] is False
    assert shown["h1"]["announced"] == ["10.1.0.200/32"]

    # h2 renews again while the router refuses once: the enable is retried next sweep.
    store.renew("h2")
    router.refuse_next = True
    now[0] += 0.3
    watch.sweep()
    assert router.commands[3:] == []
    now[0] += 0.3
    watch.sweep()
    assert router.commands[3:] == [("enable", "h2")]
