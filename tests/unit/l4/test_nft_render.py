"""nftables text of the L4 engine: golden files, each accepted by the real ``nft -c``.

Rewrite the goldens with ``python -m tests.unit.l4.nft_cases`` after a deliberate change.
A missing ``nft`` is a failure, never a skip: a ruleset nobody checked is not known to work.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest

from lbaas.l4 import nft
from lbaas.l4.service import L4Listener, L4Member, L4Protocol

from .nft_cases import CASES, GOLDEN_DIR, LB_ID, golden_path, render


def nft_check(text: str) -> subprocess.CompletedProcess[str]:
    """``nft -c -f -``: nft checks the transaction with the kernel and commits nothing."""
    binary = shutil.which("nft") or shutil.which("nft", path="/usr/sbin:/sbin")
    if binary is None:
        pytest.fail("the nft binary is required to check rendered rulesets")
    return subprocess.run(
        [binary, "-c", "-f", "-"], input=text, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_render_matches_golden(name: str) -> None:
    assert render(CASES[name]) == golden_path(name).read_text()


def test_every_golden_file_belongs_to_a_case() -> None:
    assert {path.stem for path in GOLDEN_DIR.glob("*.nft")} == set(CASES)


@pytest.mark.root
@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_is_accepted_by_nft(name: str) -> None:
    done = nft_check(golden_path(name).read_text())
    assert done.returncode == 0, done.stderr


@pytest.mark.root
def test_a_slot_update_after_a_full_load_is_accepted_by_nft() -> None:
    update = nft.render_slot_update(
        LB_ID, "tcp_80", [(3, "10.20.0.12 . 8080"), (0, "10.20.0.13 . 8081")]
    )
    done = nft_check(render(CASES["tcp_five_tuple"]) + update)
    assert done.returncode == 0, done.stderr


@pytest.mark.root
def test_nft_refuses_a_broken_ruleset() -> None:
    # The check is not a formality: the same tool refuses what it cannot load.
    done = nft_check(render(CASES["tcp_five_tuple"]).replace("jhash", "jhashh"))
    assert done.returncode != 0


def test_a_slot_update_rewrites_only_the_given_slots() -> None:
    text = nft.render_slot_update(LB_ID, "udp_53", [(9, "10.0.0.2 . 53"), (2, "10.0.0.3 . 53")])
    assert text == (
        "delete element ip lbaas m_5f0c1b7e2d4a_udp_53 { 2, 9 }\n"
        "add element ip lbaas m_5f0c1b7e2d4a_udp_53 { 2 : 10.0.0.3 . 53, 9 : 10.0.0.2 . 53 }\n"
    )
    assert nft.render_slot_update(LB_ID, "udp_53", []) == ""


def test_the_hash_seed_is_per_listener_and_stable() -> None:
    members = (L4Member("m", "10.0.0.1", 80),)
    tcp = L4Listener(L4Protocol.TCP, 80, members)
    udp = L4Listener(L4Protocol.UDP, 80, members)
    assert nft.hash_seed(LB_ID, tcp) == nft.hash_seed(LB_ID, tcp)
    assert nft.hash_seed(LB_ID, tcp) != nft.hash_seed(LB_ID, udp)
    assert nft.hash_seed(LB_ID, tcp) == 0x3801C51D
