"""A member for persistence tests: answers ``served by NAME`` and hands out a session cookie.

    python cookie_member.py ADDRESS PORT NAME

Each response sets ``SESSION=<NAME>-<n>`` (a new value per response, as an application
starting a session would), so APP_COOKIE persistence has a cookie to learn; the body names
the member, so a client can tell which member answered. Run inside a namespace with
``ip netns exec``; it serves until killed.
"""

from __future__ import annotations

import http.server
import itertools
import sys

COOKIE = "SESSION"


def main() -> None:
    address, port, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    counter = itertools.count()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the http.server hook's name)
            body = f"served by {name}\n".encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Set-Cookie", f"{COOKIE}={name}-{next(counter)}; Path=/")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    http.server.ThreadingHTTPServer((address, port), Handler).serve_forever()


if __name__ == "__main__":
    main()
