"""One long-lived libnftables context per network namespace, in a thread of its own.

Why not an ``nft`` process per command (issue 34, docs/architecture.md, "The L4 engine"):
a new ``nft`` process pays its start (``ip netns exec``, loading the library) and then
faults in fresh memory for the cache it fills from the kernel (every chain and set of the
namespace) before its first command; at 10,000 load balancers that was most of a
transaction's cost. A context that lives on keeps its heap (the next fill reuses it) and,
between a dry run and the load of the same text, the cache itself (nothing committed in
between, nftables keeps what it read).

The context's netlink socket belongs to the namespace of the thread that opened it, and
``setns`` moves only the calling thread: so the context is opened, used and freed by one
worker thread that entered the namespace first and never leaves it (a socket libnftables
reopens is opened there too). Calls queue for that thread; one runs at a time (a context
is not safe to share between threads).

``libnftables.so.1`` is Debian's ``libnftables1`` (a dependency of ``nftables``); it is
called through ``ctypes`` with the functions of its C API (``libnftables(3)``).
"""

from __future__ import annotations

import ctypes
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeVar, cast

LIBRARY = "libnftables.so.1"
_OUTPUT_JSON = 1 << 4  # NFT_CTX_OUTPUT_JSON
_OUTPUT_TERSE = 1 << 11  # NFT_CTX_OUTPUT_TERSE
_CLONE_NEWNET = 0x40000000
T = TypeVar("T")


class LibNftUnavailable(RuntimeError):
    """The library, or the namespace, could not be opened."""


@dataclass(frozen=True)
class NftResult:
    ok: bool
    output: str
    error: str


@dataclass(frozen=True)
class _Call:
    """Something to run in the worker thread, given the context."""

    action: Callable[[int], object]
    done: Future[object]


def _load_library(name: str) -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL(name)
    except OSError as exc:
        raise LibNftUnavailable(f"{name}: {exc}") from exc
    pointer, text, number = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    signatures: dict[str, tuple[object, list[object]]] = {
        "nft_ctx_new": (pointer, [ctypes.c_uint32]),
        "nft_ctx_free": (None, [pointer]),
        "nft_ctx_buffer_output": (number, [pointer]),
        "nft_ctx_buffer_error": (number, [pointer]),
        "nft_ctx_get_output_buffer": (text, [pointer]),
        "nft_ctx_get_error_buffer": (text, [pointer]),
        "nft_ctx_output_set_flags": (None, [pointer, ctypes.c_uint]),
        "nft_ctx_set_dry_run": (None, [pointer, ctypes.c_bool]),
        "nft_run_cmd_from_buffer": (number, [pointer, text]),
    }
    for function, (result, arguments) in signatures.items():
        getattr(lib, function).restype = result
        getattr(lib, function).argtypes = arguments
    return lib


def _enter_namespace(namespace: str) -> None:
    """Move the calling thread into ``ip netns``'s ``namespace`` (for good)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
    try:
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            error = ctypes.get_errno()
            raise LibNftUnavailable(f"setns {namespace}: {os.strerror(error)}")
    finally:
        os.close(fd)


class NftSession:
    """Runs nft command text in one context of ``namespace`` (None: this process's own);
    ``close`` ends the worker and frees the context."""

    def __init__(self, namespace: str | None = None, *, library: str = LIBRARY) -> None:
        self._lib = _load_library(library)
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        # Calls are queued under it, and the end after the last of them.
        self._queueing = threading.Lock()
        self._closed = False
        opened: Future[None] = Future()
        self._worker = threading.Thread(
            target=self._serve, args=(namespace, opened), name=f"nft-{namespace}", daemon=True
        )
        self._worker.start()
        opened.result()

    def _open(self, namespace: str | None) -> int:
        """A context in ``namespace``, from the worker thread (which stays there)."""
        try:
            if namespace is not None:
                _enter_namespace(namespace)
        except OSError as exc:
            raise LibNftUnavailable(f"namespace {namespace}: {exc}") from exc
        ctx: int | None = self._lib.nft_ctx_new(0)  # NFT_CTX_DEFAULT: opens the netlink socket
        if not ctx:
            raise LibNftUnavailable("nft_ctx_new failed")
        self._lib.nft_ctx_buffer_output(ctx)
        self._lib.nft_ctx_buffer_error(ctx)
        return ctx

    def _serve(self, namespace: str | None, opened: Future[None]) -> None:
        try:
            ctx = self._open(namespace)
        except LibNftUnavailable as exc:
            opened.set_exception(exc)
            return
        opened.set_result(None)
        try:
            while (call := self._calls.get()) is not None:
                try:
                    call.done.set_result(call.action(ctx))
                except Exception as exc:  # noqa: BLE001 - the caller's: a dead worker hangs it
                    call.done.set_exception(exc)
        finally:
            self._lib.nft_ctx_free(ctx)

    def run(self, text: str, *, dry_run: bool = False, json: bool = False,
            terse: bool = False) -> NftResult:  # fmt: skip
        """``text`` as ``nft -f`` would take it (``dry_run``: as ``nft -c``), one
        transaction; ``json``/``terse``: as ``-j``/``-t`` for what it lists."""
        flags = (_OUTPUT_JSON if json else 0) | (_OUTPUT_TERSE if terse else 0)
        return self._queued(lambda ctx: self._call(ctx, text, dry_run, flags))

    def in_namespace(self, action: Callable[[], T]) -> T:
        """``action()`` run by the worker, in the session's namespace (a socket it opens
        belongs there); its OSError is raised here."""
        return self._queued(lambda _ctx: action())

    def _queued(self, action: Callable[[int], T]) -> T:
        call = _Call(action, Future())
        with self._queueing:
            if self._closed:
                raise LibNftUnavailable("the session is closed")
            self._calls.put(call)
        return cast(T, call.done.result())

    def _call(self, ctx: int, text: str, dry_run: bool, flags: int) -> NftResult:
        self._lib.nft_ctx_set_dry_run(ctx, dry_run)
        self._lib.nft_ctx_output_set_flags(ctx, flags)
        status = self._lib.nft_run_cmd_from_buffer(ctx, text.encode())
        output = self._lib.nft_ctx_get_output_buffer(ctx) or b""
        error = self._lib.nft_ctx_get_error_buffer(ctx) or b""
        return NftResult(status == 0, output.decode(), error.decode())

    def close(self) -> None:
        """Frees the context once the calls queued before are done; idempotent."""
        with self._queueing:
            if not self._closed:
                self._closed = True
                self._calls.put(None)
        self._worker.join()
