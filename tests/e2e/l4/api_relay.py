"""Relays Octavia API calls from the test into a namespace: one JSON request per stdin line.

api_relay.py URL     reads {"method", "path", "body"} lines, prints {"status", "body"} lines

The distributed test runs ``lbaas serve`` inside a namespace of its own (its agents live in
other namespaces of the test, unreachable from the host's), so the test talks to the API
through this process started with ``ip netns exec``; the API answers on that namespace's
127.0.0.1.
"""

from __future__ import annotations

import json
import sys

import httpx


def main() -> None:
    with httpx.Client(base_url=sys.argv[1], timeout=60) as client:
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            try:
                response = client.request(
                    request["method"], request["path"], json=request.get("body")
                )
            except httpx.HTTPError as exc:  # not up yet, or gone: status 0
                print(json.dumps({"status": 0, "body": str(exc)}), flush=True)
                continue
            body = response.json() if response.content else None
            print(json.dumps({"status": response.status_code, "body": body}), flush=True)


if __name__ == "__main__":
    main()
