"""Quoted words must come back byte for byte after HAProxy's unquoting (manual §2.2).

``haproxy_unquote`` below is the documented behaviour of a double-quoted word, written from
the manual, so the property can be checked for many strings without starting HAProxy; the
golden and tenant-value tests then check the real parser on the hostile cases.
"""

from __future__ import annotations

import pytest

from lbaas.errors import PermanentError
from lbaas.render.haproxy.quoting import fetch_argument, log_format_literal, quoted

from .golden_cases import HOSTILE_URL, HOSTILE_VALUES

_SIMPLE_ESCAPES = {"\\": "\\", '"': '"', "'": "'", "#": "#", "$": "$", " ": " ", "n": "\n"}


def haproxy_unquote(word: str) -> str:
    """The string HAProxy reads from one fully double-quoted word, or AssertionError."""
    assert word.startswith('"') and word.endswith('"') and len(word) >= 2
    body, out, i = word[1:-1], [], 0
    while i < len(body):
        char = body[i]
        assert char != '"', "an unescaped quote would end the word"
        assert char != "$", "an unescaped dollar would expand a variable"
        assert char not in "\n\r\x00", "a raw control character would end the line"
        if char == "\\":
            nxt = body[i + 1]
            if nxt == "x":
                out.append(chr(int(body[i + 2 : i + 4], 16)))
                i += 4
                continue
            out.append(_SIMPLE_ESCAPES[nxt])
            i += 2
            continue
        out.append(char)
        i += 1
    return "".join(out)


@pytest.mark.parametrize(
    "value", [*HOSTILE_VALUES, HOSTILE_URL, "", "plain", "tab\there", "\x7f\x1b", "ünï"]
)
def test_quoted_word_unquotes_to_the_original(value: str) -> None:
    word = quoted(value)
    assert "\n" not in word
    assert haproxy_unquote(word) == value


def test_nul_is_refused() -> None:
    with pytest.raises(PermanentError):
        quoted("a\x00b")


def test_log_format_literal_doubles_percent() -> None:
    assert log_format_literal("a%[src]%") == "a%%[src]%%"


@pytest.mark.parametrize("name", ["X-Forwarded-For", "JSESSIONID", "a.b_c~d|e*f+g^h!i&j%k`l"])
def test_fetch_argument_accepts_token_names(name: str) -> None:
    assert fetch_argument(name, "header name") == name


@pytest.mark.parametrize("name", ["", "a b", "a,b", "a)b", "a'b", "a#b", "a$b", 'a"b', "a\\b"])
def test_fetch_argument_refuses_what_either_parser_interprets(name: str) -> None:
    with pytest.raises(PermanentError):
        fetch_argument(name, "header name")
