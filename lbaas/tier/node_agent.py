"""The agent on an L4 tier node: renews the node's lease and answers on its health port.

    python -m lbaas.tier.node_agent STORE NODE HEALTH_ADDRESS HEALTH_PORT [INTERVAL]

INTERVAL, when not given, is the setting ``tier.lease_renew_interval`` (read as every lbaas
process reads its settings: ``LBAAS_CONFIG``, then ``LBAAS_TIER__...`` variables), as is the
store's busy timeout (``tier.lease_store_timeout``).

Both halves of TLB's double check live in this one process, so a node whose agent died
fails both (its lease expires *and* its health port refuses), while a lease store that is
down fails only the first: renewals that fail are logged and retried at the next interval,
and the health port keeps answering. The health port accepts and closes: reaching it is the
answer.
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from pathlib import Path

from lbaas.config import load_settings
from lbaas.tier.lease_store import LeaseStoreUnavailable, SqliteLeaseStore


def serve_health(address: str, port: int) -> socket.socket:
    listener = socket.create_server((address, port), reuse_port=False)

    def accept() -> None:
        while True:
            conn, _ = listener.accept()
            conn.close()

    threading.Thread(target=accept, name="health-port", daemon=True).start()
    return listener


def renew_forever(store: SqliteLeaseStore, node: str, interval: float) -> None:
    while True:
        started = time.monotonic()
        try:
            store.renew(node)
        except LeaseStoreUnavailable as exc:
            print(f"lease renewal failed: {exc}", file=sys.stderr, flush=True)
        time.sleep(max(0.0, interval - (time.monotonic() - started)))


def main() -> None:
    store, node, address, port = sys.argv[1:5]
    tier = load_settings().tier
    interval = float(sys.argv[5]) if len(sys.argv) > 5 else tier.lease_renew_interval
    serve_health(address, int(port))
    print("ready", flush=True)
    renew_forever(SqliteLeaseStore(Path(store), tier.lease_store_timeout), node, interval)


if __name__ == "__main__":
    main()
