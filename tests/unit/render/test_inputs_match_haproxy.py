"""The data plane's rules (``render/haproxy/inputs.py``) agree with the real HAProxy.

The API refuses what these predicates refuse, so each must say "accepted" exactly when
``haproxy -c`` loads the construct: a regex as a ``-m reg`` pattern, a header name inside
``req.fhdr()``. Patterns are written through the renderer's own quoting.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lbaas.render.haproxy.inputs import is_fetch_argument, regex_error
from lbaas.render.haproxy.quoting import quoted

from .haproxy_runner import check_config

pytestmark = pytest.mark.haproxy

_CONFIG = """\
defaults
    mode http
    timeout connect 1s
    timeout client 1s
    timeout server 1s
frontend f
    bind 127.0.0.1:18080
    acl a {fetch} -m reg -- {pattern}
    http-request deny if a
"""

PATTERNS = [
    "^/api",
    "(?i)\\.png$",
    "a{2,}+",
    "(?P<n>x)",
    "(?a)x",
    "\\u0041",
    "\\N{LATIN SMALL LETTER A}",
    "(a)\\1",
    "[",
    "(?<=a+)b",
]


def _loads(tmp_path: Path, fetch: str, pattern: str) -> bool:
    path = tmp_path / "haproxy.cfg"
    path.write_text(_CONFIG.format(fetch=fetch, pattern=quoted(pattern)))
    return check_config(path).returncode == 0


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_rule_matches_haproxy(tmp_path: Path, pattern: str) -> None:
    assert (regex_error(pattern) is None) == _loads(tmp_path, "path", pattern)


@pytest.mark.parametrize("name", ["X-Trace_id", "x.y", "X#A", "X$A", "X'A", "a,b", "a(b"])
def test_accepted_header_names_load(tmp_path: Path, name: str) -> None:
    if is_fetch_argument(name):
        assert _loads(tmp_path, f"req.fhdr({name})", "^v$")
