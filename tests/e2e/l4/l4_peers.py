"""Backends and clients for the L4 end-to-end tests, run inside the test's namespaces.

l4_peers.py server NAME ADDRESS PORT   TCP: greets with NAME, then echoes "NAME line";
                                       UDP: answers every datagram with NAME
l4_peers.py tcp VIP PORT COUNT         COUNT new connections; prints the names as JSON
l4_peers.py udp VIP PORT COUNT         COUNT new sockets (new source ports); same
l4_peers.py hold VIP PORT              one connection: prints the greeting, then sends
                                       each stdin line and prints the answer (or ERROR)
l4_peers.py hold-udp VIP PORT          one UDP socket (one flow): prints the first answer,
                                       then one answer per stdin line (or ERROR)
l4_peers.py probe tcp|udp VIP PORT S   one new flow: prints the member's name, or
                                       "timeout" when none answered within S seconds
"""

from __future__ import annotations

import json
import socket
import socketserver
import sys
import threading
import time


def serve(name: str, address: str, port: int) -> None:
    class Greeter(socketserver.StreamRequestHandler):
        def handle(self) -> None:
            self.wfile.write(f"{name}\n".encode())
            for line in self.rfile:
                self.wfile.write(f"{name} {line.decode().strip()}\n".encode())

    class Answerer(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock = self.request[1]
            sock.sendto(name.encode(), self.client_address)

    socketserver.ThreadingTCPServer.allow_reuse_address = True
    socketserver.ThreadingTCPServer.daemon_threads = True
    tcp = socketserver.ThreadingTCPServer((address, port), Greeter)
    udp = socketserver.UDPServer((address, port), Answerer)
    threading.Thread(target=udp.serve_forever, daemon=True).start()
    print("ready", flush=True)
    tcp.serve_forever()


def tcp_names(vip: str, port: int, count: int) -> list[str]:
    names = []
    for _ in range(count):
        with socket.create_connection((vip, port), timeout=5) as conn:
            names.append(conn.makefile().readline().strip())
    return names


def udp_names(vip: str, port: int, count: int) -> list[str]:
    # All sockets stay open until the end: a closed one's port could be picked again, and
    # the same 5-tuple would ride the earlier flow's conntrack entry instead of a new one.
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(count)]
    try:
        names = []
        for sock in sockets:
            sock.settimeout(5)
            sock.connect((vip, port))
            sock.send(b"?")
            names.append(sock.recv(100).decode())
        return names
    finally:
        for sock in sockets:
            sock.close()


def hold(vip: str, port: int, source: str = "") -> None:
    with socket.create_connection((vip, port), timeout=5, source_address=(source, 0)) as conn:
        stream = conn.makefile("rw")
        print(stream.readline().strip(), flush=True)
        for line in sys.stdin:
            try:
                stream.write(line)
                stream.flush()
                answer = stream.readline().strip()
                print(answer or "ERROR closed", flush=True)
            except OSError as exc:
                print(f"ERROR {exc!r}", flush=True)


def hold_udp(vip: str, port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.connect((vip, port))
        sock.send(b"?")
        print(sock.recv(100).decode(), flush=True)
        for _ in sys.stdin:
            try:
                sock.send(b"?")
                print(sock.recv(100).decode(), flush=True)
            except OSError as exc:
                print(f"ERROR {exc!r}", flush=True)


def probe(protocol: str, vip: str, port: int, seconds: float) -> str:
    try:
        if protocol == "tcp":
            with socket.create_connection((vip, port), timeout=seconds) as conn:
                return conn.makefile().readline().strip()
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(seconds)
            sock.connect((vip, port))
            sock.send(b"?")
            return sock.recv(100).decode()
    except TimeoutError:
        return "timeout"


def rate(protocol: str, address: str, port: int, seconds: float) -> float:
    done = 0
    deadline = time.monotonic() + seconds
    if protocol == "udp":
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            sock.settimeout(5)
            sock.connect((address, port))
            while time.monotonic() < deadline:
                sock.send(b"?")
                sock.recv(100)
                done += 1
    else:
        while time.monotonic() < deadline:
            with socket.create_connection((address, port), timeout=5) as conn:
                conn.recv(100)
            done += 1
    return done / seconds


def main() -> None:
    mode, *args = sys.argv[1:]
    if mode == "server":
        serve(args[0], args[1], int(args[2]))
    elif mode == "rate":
        print(json.dumps(round(rate(args[0], args[1], int(args[2]), float(args[3])))))
    elif mode == "probe":
        print(probe(args[0], args[1], int(args[2]), float(args[3])))
    elif mode == "hold":
        hold(args[0], int(args[1]), *args[2:3])
    elif mode == "hold-udp":
        hold_udp(args[0], int(args[1]))
    else:
        collect = tcp_names if mode == "tcp" else udp_names
        print(json.dumps(collect(args[0], int(args[1]), int(args[2]))))


if __name__ == "__main__":
    main()
