"""The TLS part of the data-plane benchmark: a TERMINATED_HTTPS VIP vs hand-written HAProxy.

A self-signed certificate (RSA 2048, made with ``cryptography``) is stored in lbaas's key
manager as a certificate container; a TERMINATED_HTTPS listener using it is added to the
benchmark's load balancer, in front of the same pool. The same certificate, as one PEM,
serves a hand-written HAProxy (``bind ... ssl crt <pem>``, nothing else added) in front of
the same backends. ``wrk`` over https then measures, interleaved: keep-alive requests/s
(handshakes amortised) and requests/s with ``Connection: close`` — a new TCP connection per
request, but wrk 4.1 keeps its TLS session across reconnects, so these are *resumed*
handshakes (HAProxy's ``SslFrontendSessionReuse_pct`` reads 100). New (full) handshakes/s
come from ``openssl s_time -new -www /``: several clients in parallel, each doing a full
handshake and one request per connection.

Used by ``bench/dataplane.py``; not a library.
"""

from __future__ import annotations

import dataclasses
import datetime
import re
import ssl
import statistics
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from dataplane_cpu import Meter, medians, per_request, read_all
from dataplane_loadgen import Generator
from dataplane_procs import HaproxyProcess, cpu_seconds, free_port, handwritten_config

TARGET_RATIO = 0.95
CN = "bench.example.com"
ThroughputFn = Callable[..., dict[str, Any]]


def self_signed(common_name: str = CN) -> tuple[bytes, bytes]:
    """(certificate PEM, unencrypted private key PEM), valid for a day."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(common_name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


def store_certificate(url: str, cert_pem: bytes, key_pem: bytes) -> str:
    """Store both halves as secrets and return the certificate container's reference."""
    with httpx.Client(base_url=f"{url}/key-manager/v1", timeout=30) as km:
        refs = []
        for part, payload in (("certificate", cert_pem), ("private_key", key_pem)):
            body = {
                "name": f"bench-{part}",
                "payload": payload.decode(),
                "payload_content_type": "text/plain",
            }
            got = km.post("/secrets", json=body)
            if got.status_code != 201:
                raise RuntimeError(f"storing the {part}: {got.status_code} {got.text}")
            refs.append({"name": part, "secret_ref": got.json()["secret_ref"]})
        body_c = {"name": "bench-tls", "type": "certificate", "secret_refs": refs}
        got = km.post("/containers", json=body_c)
        if got.status_code != 201:
            raise RuntimeError(f"storing the container: {got.status_code} {got.text}")
        return str(got.json()["container_ref"])


def tls_answers(host: str, port: int) -> bool:
    """One GET over TLS (certificate not verified: it is self-signed) answered 200."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with httpx.Client(verify=context, timeout=2) as client:
            return client.get(f"https://{host}:{port}/").status_code == 200
    except httpx.HTTPError:
        return False


def handwritten_tls_config(
    address: str, port: int, pem: Path, servers: Sequence[tuple[str, str, int]], maxconn: int
) -> str:
    """The plain hand-written configuration with its bind line terminating TLS."""
    plain = handwritten_config(address, port, servers, maxconn)
    bind = f"    bind {address}:{port}"
    return plain.replace(bind, f"{bind} ssl crt {pem}", 1)


def _add_listener(api: Any, lb_id: str, pool_id: str, ref: str, wait: Any) -> int:
    port = free_port()
    body = {
        "listener": {
            "name": "bench-https",
            "loadbalancer_id": lb_id,
            "protocol": "TERMINATED_HTTPS",
            "protocol_port": port,
            "default_pool_id": pool_id,
            "default_tls_container_ref": ref,
        }
    }
    api.request("POST", "/v2/lbaas/listeners", body)
    wait(lb_id)
    return port


def _wait_tls(host: str, port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not tls_answers(host, port):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{host}:{port} does not answer over TLS")
        time.sleep(0.05)


def full_handshakes_per_s(host: str, port: int, seconds: int, clients: int = 4) -> float:
    """Connections/s of ``clients`` parallel ``openssl s_time -new`` (no resumption)."""
    return full_handshakes(host, port, seconds, clients)[0]


def full_handshakes(host: str, port: int, seconds: int, clients: int = 4) -> tuple[float, int]:
    """(connections/s, connections) of ``clients`` parallel ``openssl s_time -new``."""
    argv = ["openssl", "s_time", "-connect", f"{host}:{port}", "-new", "-www", "/"]
    procs = [
        subprocess.Popen(
            [*argv, "-time", str(seconds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(clients)
    ]
    rate = 0.0
    count = 0
    for proc in procs:
        out, _ = proc.communicate(timeout=seconds + 60)
        match = re.search(r"(\d+) connections in (\d+) real seconds", out)
        if match and float(match.group(2)) > 0:
            rate += int(match.group(1)) / float(match.group(2))
            count += int(match.group(1))
    return round(rate, 1), count


def handshake_runs(
    targets: dict[str, tuple[str, int]],
    seconds: int,
    reps: int,
    cpu: dict[str, Callable[[], float]] | None = None,
    meters: Mapping[str, Meter] | None = None,
) -> dict[str, Any]:
    runs: dict[str, list[float]] = {name: [] for name in targets}
    cpu_us: dict[str, list[float]] = {name: [] for name in targets}
    by_process: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
    cpu = cpu or {}
    meters = meters or {}
    names = list(targets)
    for rep in range(reps):
        for name in names[rep % 2 :] + names[: rep % 2]:
            before = cpu[name]() if name in cpu else 0.0
            every_before = read_all(meters)
            rate, count = full_handshakes(*targets[name], seconds)
            runs[name].append(rate)
            if name in cpu and count:
                cpu_us[name].append(round((cpu[name]() - before) * 1e6 / count, 1))
            if meters and count:
                by_process[name].append(per_request(every_before, read_all(meters), count))
    paired = [
        vip / hand
        for vip, hand in zip(runs["lbaas_vip"], runs["handwritten_haproxy"], strict=True)
        if hand
    ]
    return {
        "per_s": {name: round(statistics.median(v), 1) for name, v in runs.items()},
        "samples": runs,
        "ratio": round(statistics.median(paired), 3) if paired else 0,
        "haproxy_cpu_us_per_handshake": {
            name: round(statistics.median(v), 1) for name, v in cpu_us.items() if v
        },
        "cpu_us_per_handshake_by_process": {
            name: medians(v) for name, v in by_process.items() if v
        },
    }


def _summary(measured: dict[str, Any]) -> dict[str, Any]:
    keepalive = measured["keepalive"]
    close = measured["new_connection_per_request"]
    return {
        "keepalive_requests_per_s": {
            "lbaas_vip": keepalive["lbaas_vip"]["requests_per_s"],
            "handwritten_haproxy": keepalive["handwritten_haproxy"]["requests_per_s"],
        },
        "resumed_handshakes_per_s": {
            "lbaas_vip": close["lbaas_vip"]["requests_per_s"],
            "handwritten_haproxy": close["handwritten_haproxy"]["requests_per_s"],
        },
        "ratio_keepalive": keepalive["ratio_lbaas_to_handwritten"],
        "haproxy_cpu_us_per_keepalive_request": {
            name: keepalive[name].get("haproxy_cpu_us_per_request")
            for name in ("lbaas_vip", "handwritten_haproxy")
        },
        "all_processes_cpu_us_per_keepalive_request": {
            name: keepalive[name].get("cpu_us_per_request_by_process", {}).get("all_processes")
            for name in ("lbaas_vip", "handwritten_haproxy")
        },
        "ratio_resumed_handshakes": close["ratio_lbaas_to_handwritten"],
        "target_ratio_min": TARGET_RATIO,
    }


def tls_figures(
    bench: Any,
    generator: Generator,
    workdir: Path,
    maxconn: int,
    servers: Sequence[tuple[str, str, int]],
    measure: ThroughputFn,
    timing: tuple[float, int, bool],
    vip_cpu: Callable[[], float] | None = None,
    meters: Mapping[str, Meter] | None = None,
) -> tuple[dict[str, Any], HaproxyProcess | None]:
    """The ``tls`` section, and the hand-written TLS HAProxy for the caller to stop."""
    if generator.name != "wrk":
        return {"skipped": "needs wrk (the Python load generator speaks no TLS)"}, None
    cert_pem, key_pem = self_signed()
    ref = store_certificate(bench.url, cert_pem, key_pem)
    vip_port = _add_listener(bench.api, bench.lb_id, bench.pool_id, ref, bench.api.wait_active)
    pem = workdir / "handwritten-tls.pem"
    pem.write_bytes(cert_pem + key_pem)
    pem.chmod(0o600)
    hand_port = free_port()
    address = bench.plan.handwritten_address
    hand = HaproxyProcess(
        "handwritten-tls",
        handwritten_tls_config(address, hand_port, pem, servers, maxconn),
        workdir,
    )
    hand.start([(address, hand_port)])
    _wait_tls(bench.vip, vip_port)
    _wait_tls(address, hand_port)
    targets = {"lbaas_vip": (bench.vip, vip_port), "handwritten_haproxy": (address, hand_port)}
    seconds, reps, warmup = timing
    https = dataclasses.replace(generator, scheme="https")
    cpu: dict[str, Callable[[], float]] = {
        "handwritten_haproxy": lambda: cpu_seconds(hand.master_pid())
    }
    if vip_cpu is not None:
        cpu["lbaas_vip"] = vip_cpu
    every = {**(meters or {}), "handwritten_tls_haproxy": cpu["handwritten_haproxy"]}
    measured = measure(https, targets, seconds, reps, warmup, cpu=cpu, meters=every)
    full = handshake_runs(targets, max(1, round(seconds)), reps, cpu, every)
    return {
        "certificate": "self-signed RSA 2048, stored in the key manager as a container",
        "seconds_per_run": seconds,
        "repetitions": reps,
        **_summary(measured),
        "new_handshakes_per_s": full["per_s"],
        "ratio_handshakes": full["ratio"],
        "new_handshakes_samples": full["samples"],
        "haproxy_cpu_us_per_new_handshake": full["haproxy_cpu_us_per_handshake"],
        "cpu_us_per_new_handshake_by_process": full["cpu_us_per_handshake_by_process"],
        "detail": measured,
        "method": (
            "keep-alive and resumed handshakes: wrk over https, interleaved (with "
            "'Connection: close' wrk resumes its TLS session); new handshakes: 4 parallel "
            "'openssl s_time -new -www /' (full handshake + one request per connection); "
            "the VIP logs every request, the hand-written HAProxy does not"
        ),
    }, hand
