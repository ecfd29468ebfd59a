"""Compiling a regular expression with PCRE2, the engine HAProxy matches with.

Python's ``re`` accepts patterns PCRE2 refuses (``(?a)``, ``\\u0041``, ``\\N{…}``), and
refuses some it accepts; checking with ``re`` let a tenant store a rule HAProxy would not
load. HAProxy (``USE_PCRE2``) compiles ``-m reg`` patterns with ``pcre2_compile`` —
``PCRE2_NO_AUTO_CAPTURE`` always, ``PCRE2_CASELESS`` under ``-i`` — and then JIT-compiles
them, refusing the pattern if that fails. This module does the same through ``ctypes``
on the system's ``libpcre2-8`` (the library HAProxy itself links). A data-plane host
whose PCRE2 is older than the API host's may still refuse a construct added in between;
see docs/operations.md.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

PCRE2_CASELESS = 0x00000008
PCRE2_NO_AUTO_CAPTURE = 0x00002000
PCRE2_JIT_COMPLETE = 0x00000001
PCRE2_ERROR_JIT_BADOPTION = -45


class Pcre2Unavailable(RuntimeError):
    """The PCRE2 library could not be loaded."""


@functools.cache
def _library() -> ctypes.CDLL:
    name = ctypes.util.find_library("pcre2-8")
    if name is None:
        raise Pcre2Unavailable("libpcre2-8 is not installed (Debian: libpcre2-8-0)")
    lib = ctypes.CDLL(name)
    lib.pcre2_compile_8.restype = ctypes.c_void_p
    lib.pcre2_compile_8.argtypes = [
        ctypes.c_char_p,
        ctypes.c_size_t,
        ctypes.c_uint32,
        ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_size_t),
        ctypes.c_void_p,
    ]
    lib.pcre2_jit_compile_8.restype = ctypes.c_int
    lib.pcre2_jit_compile_8.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.pcre2_code_free_8.restype = None
    lib.pcre2_code_free_8.argtypes = [ctypes.c_void_p]
    lib.pcre2_get_error_message_8.restype = ctypes.c_int
    lib.pcre2_get_error_message_8.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    return lib


def _message(lib: ctypes.CDLL, code: int) -> str:
    buffer = ctypes.create_string_buffer(256)
    lib.pcre2_get_error_message_8(code, buffer, len(buffer))
    return buffer.value.decode("utf-8", "replace")


def pcre2_error(pattern: str, caseless: bool = False) -> str | None:
    """Why HAProxy's engine refuses ``pattern`` (with its offset), or None if it compiles."""
    lib = _library()
    data = pattern.encode("utf-8")
    if b"\x00" in data:
        return "NUL character in pattern"
    flags = PCRE2_NO_AUTO_CAPTURE | (PCRE2_CASELESS if caseless else 0)
    code, offset = ctypes.c_int(0), ctypes.c_size_t(0)
    compiled = lib.pcre2_compile_8(data, len(data), flags, code, offset, None)
    if not compiled:
        return f"{_message(lib, code.value)} at offset {offset.value}"
    try:
        jit = lib.pcre2_jit_compile_8(compiled, PCRE2_JIT_COMPLETE)
        if jit < 0 and jit != PCRE2_ERROR_JIT_BADOPTION:
            return f"JIT compilation failed: {_message(lib, jit)}"
        return None
    finally:
        lib.pcre2_code_free_8(compiled)
