"""What the HAProxy data plane can apply: the one definition of each tenant-string rule.

The API validates requests with these predicates and the renderer checks the graph with
the same ones, so what the API accepts renders into a configuration HAProxy loads (a rule
that differs on the two sides left load balancers in ERROR after the API said 201).

* Header and cookie names go inside a sample fetch's parentheses (``req.fhdr(<name>)``,
  ``req.cook(<name>)``, ``stick on req.cook(<name>)``), where HAProxy reads ``#`` as a
  comment, ``$`` as a variable and ``'`` as a quote, and ``,``/``(``/``)`` as delimiters.
  Names are therefore the RFC 7230 token characters minus ``#``, ``$`` and ``'``.
* Addresses and CIDRs are parsed by HAProxy itself: IPv4 or IPv6, without an IPv6 zone
  (``fe80::1%eth0``: Python accepts any text after ``%``, spaces included).
* ``expected_codes``: three ASCII digits (``[0-9]``, not ``\\d``, which also matches
  other scripts' digits), as one code, a comma list, or an ascending range.
* Strings HAProxy sends in HTTP requests (a monitor's ``url_path`` and ``domain_name``)
  hold no control characters: a newline there would split the request.
* Regular expressions compile with PCRE2 as HAProxy compiles them (``pcre2.py``).
"""

from __future__ import annotations

import ipaddress
import re

from lbaas.render.haproxy.pcre2 import pcre2_error

FETCH_ARGUMENT = re.compile(r"[A-Za-z0-9!%&*+.^_`|~-]+")
_STATUS = r"[0-9]{3}"
EXPECTED_CODES_LIST = rf"{_STATUS}(?:[ \t]*,[ \t]*{_STATUS})*"
EXPECTED_CODES = re.compile(rf"{EXPECTED_CODES_LIST}|({_STATUS})-({_STATUS})")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def is_fetch_argument(name: str) -> bool:
    """Whether a header or cookie name can be used inside a sample fetch's parentheses."""
    return FETCH_ARGUMENT.fullmatch(name) is not None


def plain_address(text: str) -> str | None:
    """``text`` in canonical form if it is an IP address HAProxy can parse, else None."""
    if "%" in text:
        return None  # an IPv6 zone: HAProxy has no syntax for it on server lines
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def plain_cidr(text: str) -> str | None:
    """``text`` as network/prefix (host bits cleared) if HAProxy can parse it, else None."""
    if "%" in text:
        return None  # an IPv6 zone, as in ``plain_address``
    try:
        return str(ipaddress.ip_network(text, strict=False))
    except ValueError:
        return None


def is_expected_codes(text: str) -> bool:
    """One status, a comma list of statuses, or a range whose end is not below its start."""
    match = EXPECTED_CODES.fullmatch(text)
    return match is not None and (match.group(1) is None or match.group(1) <= match.group(2))


def has_control_characters(text: str) -> bool:
    return _CONTROL.search(text) is not None


def regex_error(pattern: str, caseless: bool = False) -> str | None:
    """Why HAProxy would refuse ``pattern`` as a ``-m reg`` pattern, or None."""
    return pcre2_error(pattern, caseless)
