"""The counter ledger on disk, so an agent restart neither loses nor repeats a count.

HAProxy keeps running when the agent restarts, and its workers' counters keep their values.
A new agent life sends heartbeats under a new epoch, which the health manager takes for a
new process counting from zero: it adds everything the old epoch last reported to its base.
Had the new agent reported HAProxy's cumulative values again, every restart would count the
same traffic once more (50, 100, 150 connections with no traffic at all).

So the ledger is written beside the amphora's files after every collection that changed it
(``counters.json``, 0600), and a new agent life resumes it *rebased*: everything already
reported becomes a negative carry, so the first report of the new epoch holds only what was
counted since the last report of the old one. What the old life read after its last report
(a held worker's final read, say) is not reported: at most one heartbeat interval of traffic
goes uncounted, never any twice. The heartbeat format is unchanged.

A file that cannot be read, or belongs to another load balancer, starts a fresh ledger.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from lbaas.model.graph import ListenerId, LoadBalancerId
from lbaas.model.health import ListenerCounters
from lbaas.private_files import write_private

log = logging.getLogger(__name__)

#: The ledger of one amphora, in its directory.
LEDGER_FILE = "counters.json"
_NAMES = tuple(f.name for f in fields(ListenerCounters))

PerListener = dict[ListenerId, ListenerCounters]


def ledger_document(
    loadbalancer_id: str,
    carried: Mapping[ListenerId, ListenerCounters],
    workers: Mapping[int, Mapping[ListenerId, ListenerCounters]],
) -> str:
    """The ledger as the JSON text stored (stable, so unchanged state is not rewritten)."""
    return json.dumps(
        {
            "loadbalancer_id": loadbalancer_id,
            "carried": _encode(carried),
            "workers": {str(pid): _encode(counters) for pid, counters in workers.items()},
        },
        sort_keys=True,
        separators=(",", ":"),
    )


def load_ledger(
    path: Path, loadbalancer_id: LoadBalancerId
) -> tuple[PerListener, dict[int, PerListener]] | None:
    """(carried, workers) stored at ``path`` for ``loadbalancer_id``; None to start afresh."""
    try:
        doc = json.loads(path.read_bytes())
        if doc["loadbalancer_id"] != loadbalancer_id:
            return None
        carried = _decode(doc["carried"])
        workers = {int(pid): _decode(counters) for pid, counters in doc["workers"].items()}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("unreadable counter ledger %s, starting afresh: %s", path, exc)
        return None
    return carried, workers


def save_ledger(path: Path, document: str) -> None:
    try:
        write_private(path, document)
    except OSError as exc:  # the amphora may be being deleted; the next collection retries
        log.warning("cannot store the counter ledger %s: %s", path, exc)


def _encode(counters: Mapping[ListenerId, ListenerCounters]) -> dict[str, dict[str, int]]:
    return {lid: asdict(value) for lid, value in counters.items()}


def _decode(doc: Any) -> PerListener:
    decoded: PerListener = {}
    for lid, values in dict(doc).items():
        numbers = {name: values.get(name, 0) for name in _NAMES}
        if not all(type(v) is int for v in numbers.values()):
            raise ValueError(f"listener {lid}: counters must be integers")
        decoded[ListenerId(str(lid))] = ListenerCounters(**numbers)
    return decoded
