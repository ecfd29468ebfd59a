"""Leases in etcd, through etcd's own leases (the ``etcd3gw`` client of its v3 gateway).

A lease ``name`` is the key ``/lbaas/lease/<name>`` holding the holder's name, attached
to an etcd lease granted with the TTL: etcd's leader counts it down, so expiry is by the
engine's clock, and the key vanishes with it. Taking is one transaction, "create the key
if it does not exist" (the same compare etcd3gw's own ``Lock`` makes); a holder that finds
the key already its own (a restarted process of the same node) moves it onto its new
lease. Renewing is a keep-alive of the etcd lease; a keep-alive that finds it expired
takes the key again.

etcd's lease TTL is a whole number of seconds, and etcd refuses to let one end sooner than
about 1.5 election timeouts (1.5 s with the default tuning): a TTL below that is granted
as etcd's minimum. The holder still fences after the TTL it asked for (``LeaseKeeper``
counts it itself), so a shorter TTL stays safe, but a watcher reading etcd sees the node
only after etcd's own TTL: TLB's 500 ms needs the PostgreSQL engine (docs/architecture.md).
"""

from __future__ import annotations

import base64
import math
import threading
from typing import Any
from urllib.parse import urlsplit

import etcd3gw
from etcd3gw import exceptions
from etcd3gw.lease import Lease

from lbaas.coordination.base import CoordinationUnavailable, LiveLease, check_lease

_PREFIX = "/lbaas/lease/"


def _encode(text: str) -> str:
    """Keys and values travel base64-encoded in etcd's JSON gateway."""
    return base64.b64encode(text.encode()).decode()


class EtcdCoordinator:
    def __init__(self, url: str, timeout: float = 1.0, prefix: str = _PREFIX) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"etcd URL {url!r} is not http(s)://host:port")
        self._client = etcd3gw.client(
            host=parts.hostname,
            port=parts.port or 2379,
            protocol=parts.scheme,
            timeout=timeout,
        )
        self._prefix = prefix
        self._lock = threading.Lock()
        self._leases: dict[tuple[str, str], Lease] = {}  # (name, holder) -> its etcd lease

    def _key(self, name: str) -> str:
        return self._prefix + name

    def renew(self, name: str, holder: str, ttl: float) -> bool:
        check_lease(name, holder, ttl)
        with self._lock:
            try:
                held = self._leases.get((name, holder))
                if held is not None and held.refresh() > 0:
                    return True
                self._leases.pop((name, holder), None)
                return self._take(name, holder, math.ceil(ttl))
            except exceptions.Etcd3Exception as exc:
                raise CoordinationUnavailable(f"etcd coordination: {exc}") from exc

    def _put_if(self, compare: dict[str, Any], key: str, holder: str, lease: Lease) -> bool:
        put = {"request_put": {"key": _encode(key), "value": _encode(holder), "lease": lease.id}}
        result = self._client.transaction({"compare": [compare], "success": [put]})
        return bool(result.get("succeeded", False))

    def _take(self, name: str, holder: str, ttl: int) -> bool:
        key, lease = self._key(name), self._client.lease(ttl)
        absent = {"key": _encode(key), "result": "EQUAL", "target": "CREATE", "create_revision": 0}
        ours = {"key": _encode(key), "result": "EQUAL", "target": "VALUE", "value": _encode(holder)}
        if self._put_if(absent, key, holder, lease) or self._put_if(ours, key, holder, lease):
            self._leases[(name, holder)] = lease
            return True
        lease.revoke()
        return False

    def release(self, name: str, holder: str) -> None:
        with self._lock:
            lease = self._leases.pop((name, holder), None)
            try:
                if lease is not None:
                    lease.revoke()  # the key goes with it
            except exceptions.Etcd3Exception as exc:
                raise CoordinationUnavailable(f"etcd coordination: {exc}") from exc

    def live(self, prefix: str) -> list[LiveLease]:
        with self._lock:  # one HTTP session, shared with the renewing thread
            return self._live(prefix)

    def _live(self, prefix: str) -> list[LiveLease]:
        try:
            found = self._client.get_prefix(self._key(prefix))
            leases = []
            for value, meta in found:
                remaining = self._time_to_live(int(meta.get("lease", 0)))
                if remaining >= 0:  # 0: under a second left, not yet expired
                    name = meta["key"].decode().removeprefix(self._prefix)
                    leases.append(LiveLease(name, value.decode(), float(remaining)))
            return sorted(leases, key=lambda lease: lease.name)
        except exceptions.Etcd3Exception as exc:
            raise CoordinationUnavailable(f"etcd coordination: {exc}") from exc

    def _time_to_live(self, lease_id: int) -> int:
        """Whole seconds left of an etcd lease, rounded down: 0 is under a second left
        (the gateway leaves a zero out), -1 expired."""
        url = self._client.get_url("/kv/lease/timetolive")
        return int(self._client.post(url, json={"ID": lease_id}).get("TTL", 0))

    def close(self) -> None:
        self._client.session.close()
