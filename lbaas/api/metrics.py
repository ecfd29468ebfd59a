"""``/metrics`` in Prometheus' text format: the control plane's state and this process's
request counts.

Written out by hand: a dozen lines of an open format do not need a client library, and
the database figures (``lbaas.db.metrics_queries``) are read at scrape time, never cached,
so every API process reports the same state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from lbaas.db.metrics_queries import ControlPlaneCounts


class RequestCounter:
    """Responses of this process by method and status code.

    Counted by the edge middleware on the event loop's one thread, so a plain counter
    needs no lock.
    """

    def __init__(self) -> None:
        self.counts: Counter[tuple[str, int]] = Counter()

    def count(self, method: str, status: int) -> None:
        self.counts[(method, status)] += 1


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _family(
    name: str, kind: str, help_text: str, samples: dict[str, float] | float, label: str = ""
) -> Iterator[str]:
    yield f"# HELP {name} {help_text}"
    yield f"# TYPE {name} {kind}"
    if isinstance(samples, dict):
        for value, number in sorted(samples.items()):
            yield f'{name}{{{label}="{_escape(value)}"}} {number:g}'
    else:
        yield f"{name} {samples:g}"


def render_metrics(state: ControlPlaneCounts, requests: RequestCounter) -> str:
    lines = [
        *_family(
            "lbaas_loadbalancers",
            "gauge",
            "Load balancers by provisioning status (DELETED ones until housekeeping).",
            {k: float(v) for k, v in state.loadbalancers.items()},
            "provisioning_status",
        ),
        *_family(
            "lbaas_amphorae",
            "gauge",
            "Amphorae by status.",
            {k: float(v) for k, v in state.amphorae.items()},
            "status",
        ),
        *_family(
            "lbaas_converge_jobs",
            "gauge",
            "Converge jobs with work to do: queued (runnable, unclaimed), running (leased), "
            "backing_off (waiting to retry).",
            {k: float(v) for k, v in state.jobs.items()},
            "state",
        ),
        *_family(
            "lbaas_converge_oldest_queued_seconds",
            "gauge",
            "How long the oldest runnable job has waited for a worker (0 when none waits).",
            state.oldest_queued_seconds,
        ),
        "# HELP lbaas_api_responses_total Responses of this API process.",
        "# TYPE lbaas_api_responses_total counter",
    ]
    for (method, status), number in sorted(requests.counts.items()):
        lines.append(
            f'lbaas_api_responses_total{{method="{_escape(method)}",code="{status}"}} {number}'
        )
    return "\n".join(lines) + "\n"
