"""Turning arbitrary strings into exactly one HAProxy configuration word.

L7 rule values, redirect URLs, health-check paths and file paths reach the configuration
from tenants and operators. HAProxy splits a line into words on spaces, starts a comment at
an unprotected ``#``, treats single quotes as strong quoting and expands ``$VAR`` inside
double quotes (configuration manual, section 2.2). A value that is pasted in as it is could
therefore be cut into several words, end the line early, or read the process environment.

Every such string is emitted inside double quotes with ``\\``, ``"`` and ``$`` escaped and
control characters written as ``\\xNN``: after HAProxy's own unquoting the word is byte for
byte the original string, whatever it contains. The rule is applied to every string that
did not come from the renderer itself, even when a reader can see it is harmless, so that
safety never depends on someone else's validation.

Some arguments are additionally log-format strings, where ``%`` introduces a variable;
``log_format_literal`` doubles it first. Names inside a sample fetch's parentheses are not
quoted but checked (``fetch_argument``).
"""

from __future__ import annotations

from lbaas.errors import PermanentError
from lbaas.render.haproxy.inputs import is_fetch_argument

_ESCAPED = frozenset('\\"$')


def quoted(value: str) -> str:
    """``value`` as one double-quoted HAProxy word that unquotes to exactly ``value``."""
    if "\x00" in value:
        raise PermanentError(
            "A configuration value contains a NUL character.",
            f"NUL character in value {value!r}",
        )
    parts = ['"']
    for char in value:
        if char in _ESCAPED:
            parts.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            parts.append(f"\\x{ord(char):02x}")
        else:
            parts.append(char)
    parts.append('"')
    return "".join(parts)


def log_format_literal(value: str) -> str:
    """``value`` made safe for an argument HAProxy evaluates as a log-format string."""
    return value.replace("%", "%%")


def fetch_argument(value: str, what: str) -> str:
    """``value`` unchanged if it is safe inside a sample fetch's parentheses.

    Header and cookie names go into ``req.fhdr(<name>)`` and ``req.cook(<name>)``, where
    HAProxy applies a second level of quoting (section 2.2) and commas and parentheses are
    delimiters. Rather than stack two escaping layers, names are limited to the token
    characters that mean nothing to either parser (``inputs.is_fetch_argument``, which the
    API validates with too); ``#``, ``$`` and ``'`` are valid HTTP token characters but are
    refused, as nobody names a header with them.
    """
    if not is_fetch_argument(value):
        raise PermanentError(
            f"The {what} {value!r} contains characters this provider cannot use.",
            f"unsafe {what} {value!r} for an HAProxy sample fetch argument",
        )
    return value
