"""The access-log line of a listener, in Octavia's tenant flow-log format.

Octavia's default ``user_log_format`` is, with its two template fields filled in::

    <project_id> <lb_id> %f %ci %cp %t %{+Q}r %ST %B %U %[ssl_c_verify] %{+Q}[ssl_c_s_dn] %b %s %Tt %tsc

lbaas writes the same fields in the same order with two differences that keep the ids
exact: the frontend field is the listener id itself (a literal, where HAProxy's ``%f``
would give the ``fe_`` name), and a TCP listener writes ``"-"`` for the request line and
``-`` for the status, as HAProxy has neither outside HTTP mode. ``%b`` and ``%s`` are the
pool and member as HAProxy names them (``be_<pool id>``, ``srv_<member id>``), ``<NOSRV>``
when no member was chosen; timings: ``%Tt`` total milliseconds, and the flags ``%tsc``
say how the session ended (``----`` is a normal end). Every request of an HTTP listener
gives one line (keep-alive included) and every connection of a TCP listener gives one.

The two client-certificate fields can only have a value on a listener that terminates TLS;
elsewhere HAProxy's fetches fail and it writes ``-`` and ``""``. Those listeners get the two
literals instead: the same bytes without two sample fetches per line (130-210 of the
~8,100-8,300 instructions a line costs HAProxy 2.6, counted with callgrind by
``bench/access_log_instructions.py``).

The client address of an IPv4 frontend is ``%[src,be2dec(.,1)]``: the four bytes of the
address in decimal, dot-separated, which is the dotted quad ``%ci`` prints, made without
glibc's ``inet_ntop`` (which goes through ``sprintf``): 951 instructions a line instead of
2,177, 1,226 fewer per keep-alive request of ~33,500 (callgrind, the same bench). An IPv6
frontend keeps ``%ci``, whose form the converter would not give.

The ids come from the database and are checked (``checked_id``) before they are written,
so a line always has the same number of space-separated fields before the quoted request.
"""

from __future__ import annotations

import re

from lbaas.render.haproxy.names import checked_id

#: HAProxy truncates longer lines; a long URL is the usual reason for a long line.
MAX_LINE = 8192
#: The ring HAProxy logs into (``ring_lines``).
RING = "access_log"
#: Bytes of lines a worker holds for the agent: about 60,000 lines of ~270 bytes, three
#: seconds of the benchmark's rate with the agent reading nothing at all.
RING_SIZE = 16 * 1024 * 1024
_TLS_FIELDS = "%[ssl_c_verify] %{+Q}[ssl_c_s_dn]"
#: What HAProxy writes for ``_TLS_FIELDS`` on a connection without TLS (both fetches fail).
_NO_TLS_FIELDS = '- ""'
_UNSAFE = re.compile(r"[^A-Za-z0-9._:-]")
#: ``%ci``'s dotted quad for an IPv4 client, without ``inet_ntop``.
IPV4_CLIENT = "%[src,be2dec(.,1)]"


def access_log_format(
    project_id: str,
    lb_id: str,
    listener_id: str,
    http: bool,
    terminates_tls: bool,
    ipv4: bool = False,
) -> str:
    """The ``log-format`` argument of one listener's frontend (no quoting needed);
    ``ipv4``: the frontend binds an IPv4 address, so every client is IPv4."""
    # A project id is whatever the identity service gave: written with its unsafe
    # characters replaced, never refused (the load balancer must still be served).
    project = _UNSAFE.sub("_", project_id) or "-"
    ids = " ".join((project, checked_id(lb_id), checked_id(listener_id)))
    request = "%{+Q}r %ST" if http else '"-" -'
    tls = _TLS_FIELDS if terminates_tls else _NO_TLS_FIELDS
    client = IPV4_CLIENT if ipv4 else "%ci"
    return f"{ids} {client} %cp %t {request} %B %U {tls} %b %s %Tt %tsc"


def global_log_line() -> str:
    """The ``log`` directive writing raw lines into the access-log ring (``ring_lines``)."""
    return f"log ring@{RING} len {MAX_LINE} format raw local0 info"


def ring_lines(quoted_socket: str) -> tuple[str, ...]:
    """The ``ring`` section: a buffer in HAProxy's memory, forwarded to the agent's socket.

    A worker only copies each line into the ring (no system call, no reader to wake per
    line); the ring's own forwarder streams what is there to the agent, many lines per
    write, and keeps whatever the agent has not taken yet, up to ``RING_SIZE``, while
    the agent is slow or away (it reconnects). ``log-proto legacy`` ends each raw line
    with a newline and adds nothing else, so the agent parses no framing.
    """
    return (
        "format raw",
        f"maxlen {MAX_LINE}",
        f"size {RING_SIZE}",
        "timeout connect 5s",
        "timeout server 30s",
        f"server agent {quoted_socket} log-proto legacy",
    )
