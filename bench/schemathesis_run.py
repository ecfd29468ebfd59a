"""Schemathesis over the API's own OpenAPI document; prints its findings as JSON.

    python bench/schemathesis_run.py [--max-examples N] [--stateful-examples N]
                                     [--max-time S] [--seed N] [--keep-events FILE]

Starts a fresh ``lbaas serve`` (noop provider, ``noauth``) on a free loopback port and
runs ``schemathesis run`` against ``/openapi.json`` with the coverage, fuzzing and
stateful phases and every check, bounded by ``--max-examples`` and ``--max-time``. Prints
one JSON object: the failures counted by check, and up to three examples of each
(method, path, status, message). A run that finds nothing prints ``"failures": 0``.
Nothing here asserts; ``tests/fuzz`` holds the assertions.
"""

from __future__ import annotations

import argparse
import base64
import collections
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from control_plane import _start_server  # bench/ is the script's directory

from lbaas.api.openapi_rules import SEMANTIC_REFUSAL

PHASES = "examples,coverage,fuzzing,stateful"
# Every request valid by the document must be accepted: 2xx, or a refusal no schema can
# foresee — 404 (an id that names nothing), 409 (the load balancer is busy), 403 (a
# quota). A 400 is a conformance failure, except Octavia's semantic refusals
# (``SEMANTIC_REFUSAL``: a subnet that does not exist, a protocol that does not fit its
# listener...), which are counted apart.
# A quota "DELETE" resets the project's quota to the defaults, as in Octavia: the quota
# stays readable afterwards, which the use-after-free check takes for a resource that
# was not deleted. That check is off for those paths (docs/api-compat.md).
CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]

# The stateful phase follows the document's links (POST a load balancer, then its
# listeners, pools, members...): longer scenarios of valid requests reach deeper.
[phases.stateful]
max-steps = 12

[phases.stateful.generation]
mode = "positive"
max-examples = STATEFUL_EXAMPLES

[[operations]]
include-path-regex = "^/v2/lbaas/quotas/"
checks.use_after_free.enabled = false
"""


def _text(body: Any) -> str:
    """A recorded body: schemathesis stores bytes as ``{"$base64": …}``."""
    if isinstance(body, dict) and "$base64" in body:
        return base64.b64decode(body["$base64"]).decode("utf-8", "replace")
    return "" if body is None else str(body)


def _fault(text: str) -> str:
    try:
        return str(json.loads(text).get("faultstring", text))
    except (ValueError, AttributeError):
        return text


def _failures(events_path: Path) -> list[dict[str, Any]]:
    """Distinct failures (check, operation, status, message) in schemathesis's NDJSON."""
    found: dict[tuple[str, ...], dict[str, Any]] = {}
    for line in events_path.read_text().splitlines():
        if not line.startswith('{"ScenarioFinished"') or '"failure_info"' not in line:
            continue
        recorder = json.loads(line)["ScenarioFinished"].get("recorder") or {}
        interactions = recorder.get("interactions") or {}
        for case_id, checks in (recorder.get("checks") or {}).items():
            interaction = interactions.get(case_id) or {}
            response = interaction.get("response") or {}
            for check in checks:
                failure = (check.get("failure_info") or {}).get("failure")
                if check.get("status") != "failure" or not failure:
                    continue
                answer = _fault(_text(response.get("content")))
                entry = {
                    "check": check["name"],
                    "title": failure.get("title"),
                    "operation": failure.get("operation"),
                    "status": response.get("status_code"),
                    "message": answer[:300] if response else str(failure.get("message"))[:300],
                    # judged on the whole answer: a long value pushes the words past 300
                    "semantic": check["name"] == "positive_data_acceptance"
                    and response.get("status_code") == 400
                    and SEMANTIC_REFUSAL.search(answer) is not None,
                    "request": _text((interaction.get("request") or {}).get("body"))[:300],
                }
                key = (
                    entry["check"],
                    str(entry["operation"]),
                    str(entry["status"]),
                    _first_words(entry["message"]),
                )
                found.setdefault(key, entry)
    return list(found.values())


def _semantic(failure: dict[str, Any]) -> bool:
    return bool(failure.get("semantic"))


def run(
    max_examples: int,
    stateful_examples: int,
    max_time: int,
    seed: int,
    keep_events: Path | None,
    phases: str = PHASES,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lbaas-st-") as tmp:
        state = Path(tmp)
        proc, url = _start_server(
            state, "", {"LBAAS_API__AUTH_STRATEGY": "noauth", "LBAAS_WORKER__POLL_INTERVAL": "0.1"}
        )
        events = state / "events.ndjson"
        (state / "schemathesis.toml").write_text(
            CONFIG.replace("STATEFUL_EXAMPLES", str(stateful_examples))
        )
        try:
            started = time.monotonic()
            done = subprocess.run(
                [
                    str(Path(sys.executable).with_name("schemathesis")),
                    "run",
                    f"{url}/openapi.json",
                    "--phases",
                    phases,
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
                capture_output=True,
                text=True,
                check=False,
            )
            elapsed = time.monotonic() - started
        finally:
            proc.kill()
            proc.wait(10)
        if not events.exists() or '"ScenarioFinished"' not in events.read_text():
            # schemathesis refused to start (a configuration or document error): no
            # finding is not "no failures"
            raise SystemExit(f"schemathesis ran nothing:\n{done.stdout[-2000:]}")
        failures = _failures(events)
        reached = _reach(events)
        if keep_events is not None and events.exists():
            keep_events.write_bytes(events.read_bytes())
    semantic = [f for f in failures if _semantic(f)]
    failures = [f for f in failures if not _semantic(f)]
    for f in failures:
        f.pop("semantic", None)
    by_check = collections.Counter(str(f["title"]) for f in failures)
    examples: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for f in failures:
        if len(examples[str(f["title"])]) < 3:
            examples[str(f["title"])].append(f)
    refusals = collections.Counter(_first_words(f["message"]) for f in semantic)
    return {
        "phases": phases,
        "max_examples": max_examples,
        "stateful_examples": stateful_examples,
        "seed": seed,
        "seconds": round(elapsed, 1),
        "operations_reached": reached,
        "server_errors": by_check.get("Server error", 0),
        "failures": len(failures),
        "by_check": dict(by_check),
        "examples": examples,
        "semantic_refusals": len(semantic),
        "semantic_refusals_by_message": dict(refusals.most_common()),
    }


def _first_words(message: str) -> str:
    """A refusal's message without the values it names, to count refusals by kind."""
    message = re.sub(r"'[^']*'", "'…'", message)
    message = re.sub(r"[0-9a-fA-F]{8}(-?[0-9a-fA-F]{4}){3}-?[0-9a-fA-F]{12}", "<id>", message)
    return re.sub(r"^.* is not a valid option for ", "<value> is not a valid option for ", message)[
        :120
    ]


def _reach(events_path: Path) -> dict[str, int]:
    """How many operations answered 2xx at all, and in the stateful phase through a link."""
    answered: set[str] = set()
    linked: set[str] = set()
    transitions = 0
    for line in events_path.read_text().splitlines():
        if not line.startswith('{"ScenarioFinished"'):
            continue
        scenario = json.loads(line)["ScenarioFinished"]
        recorder = scenario.get("recorder") or {}
        interactions = recorder.get("interactions") or {}
        for case_id, case in (recorder.get("cases") or {}).items():
            response = (interactions.get(case_id) or {}).get("response") or {}
            if not 200 <= int(response.get("status_code") or 0) < 300:
                continue
            operation = f"{case['value']['method']} {case['value']['path']}"
            answered.add(operation)
            if scenario.get("phase") == "stateful" and case.get("transition"):
                linked.add(operation)
                transitions += 1
    return {
        "operations_answering_2xx": len(answered),
        "stateful_operations_reached_by_links": len(linked),
        "stateful_linked_calls_2xx": transitions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=20)
    parser.add_argument(
        "--stateful-examples", type=int, default=100, help="scenarios of the stateful phase"
    )
    parser.add_argument("--max-time", type=int, default=300)
    parser.add_argument("--phases", default=PHASES, help="schemathesis phases, comma separated")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-events", type=Path, help="copy schemathesis's NDJSON here")
    args = parser.parse_args()
    result = run(
        args.max_examples,
        args.stateful_examples,
        args.max_time,
        args.seed,
        args.keep_events,
        args.phases,
    )
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
