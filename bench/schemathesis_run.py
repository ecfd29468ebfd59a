"""Schemathesis over the API's own OpenAPI document; prints its findings as JSON.

    python bench/schemathesis_run.py [--max-examples N] [--max-time S] [--seed N]

Starts a fresh ``lbaas serve`` (noop provider, ``noauth``) on a free loopback port and
runs ``schemathesis run`` against ``/openapi.json`` with the coverage, fuzzing and
stateful phases and every check, bounded by ``--max-examples`` and ``--max-time``. Prints
one JSON object: the failures counted by check, and up to three examples of each
(method, path, status, message). A run that finds nothing prints ``"failures": 0``.
Nothing here asserts; ``tests/fuzz`` holds the assertions.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from control_plane import _start_server  # bench/ is the script's directory

PHASES = "examples,coverage,fuzzing,stateful"
# A request can be valid by the document and still be refused with a 400 for what no
# schema can say (the provider is not enabled, a referenced subnet does not exist, a
# pool protocol does not fit its listener): Octavia's semantic validation.
# A quota "DELETE" resets the project's quota to the defaults, as in Octavia: the quota
# stays readable afterwards, which the use-after-free check takes for a resource that
# was not deleted. That check is off for that one path (docs/api-compat.md).
CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]

[[operations]]
include-path = "/v2/lbaas/quotas/{project_id}"
checks.use_after_free.enabled = false
"""


def _failures(events_path: Path) -> list[dict[str, Any]]:
    """Distinct failures (check, operation, status, message) in schemathesis's NDJSON."""
    found: dict[tuple[str, ...], dict[str, Any]] = {}
    for line in events_path.read_text().splitlines():
        if not line.startswith('{"ScenarioFinished"') or '"failure_info"' not in line:
            continue
        scenario = json.loads(line)["ScenarioFinished"]
        interactions = scenario.get("interactions") or {}
        for case_id, checks in (scenario.get("recorder", {}).get("checks") or {}).items():
            response = (interactions.get(case_id) or {}).get("response") or {}
            for check in checks:
                failure = (check.get("failure_info") or {}).get("failure")
                if check.get("status") != "failure" or not failure:
                    continue
                entry = {
                    "check": check["name"],
                    "title": failure.get("title"),
                    "operation": failure.get("operation"),
                    "status": response.get("status_code"),
                    "message": str(failure.get("message", ""))[:300],
                }
                key = (entry["check"], entry["operation"], str(entry["status"]), entry["message"])
                found.setdefault(key, entry)
    return list(found.values())


def run(max_examples: int, max_time: int, seed: int, keep_events: Path | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lbaas-st-") as tmp:
        state = Path(tmp)
        proc, url = _start_server(
            state, "", {"LBAAS_API__AUTH_STRATEGY": "noauth", "LBAAS_WORKER__POLL_INTERVAL": "0.1"}
        )
        events = state / "events.ndjson"
        (state / "schemathesis.toml").write_text(CONFIG)
        try:
            started = time.monotonic()
            subprocess.run(
                [
                    str(Path(sys.executable).with_name("schemathesis")),
                    "run",
                    f"{url}/openapi.json",
                    "--phases",
                    PHASES,
                    "--checks",
                    "all",
                    "--max-examples",
                    str(max_examples),
                    "--max-time",
                    str(max_time),
                    "--seed",
                    str(seed),
                    "--continue-on-failure",
                    "--suppress-health-check",
                    "all",
                    "--report",
                    "ndjson",
                    "--report-ndjson-path",
                    str(events),
                ],
                cwd=state,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            elapsed = time.monotonic() - started
        finally:
            proc.kill()
            proc.wait(10)
        failures = _failures(events) if events.exists() else []
        if keep_events is not None and events.exists():
            keep_events.write_bytes(events.read_bytes())
    by_check = collections.Counter(str(f["title"]) for f in failures)
    examples: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for f in failures:
        if len(examples[str(f["title"])]) < 3:
            examples[str(f["title"])].append(f)
    return {
        "phases": PHASES,
        "max_examples": max_examples,
        "seed": seed,
        "seconds": round(elapsed, 1),
        "failures": len(failures),
        "by_check": dict(by_check),
        "examples": examples,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument("--max-time", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-events", type=Path, help="copy schemathesis's NDJSON here")
    args = parser.parse_args()
    print(json.dumps(run(args.max_examples, args.max_time, args.seed, args.keep_events), indent=2))


if __name__ == "__main__":
    main()
