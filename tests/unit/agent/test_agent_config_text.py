"""Reading rendered configuration text: words, files, and runtime-only differences."""

from __future__ import annotations

from pathlib import Path

from agent_fakes import make_config

from lbaas.agent.haproxy_config_text import (
    ServerChange,
    read_config_facts,
    runtime_only_changes,
    split_words,
)


def test_split_words_follows_haproxy_quoting() -> None:
    assert split_words('  stats socket "/a b/s.sock" mode 600 # note') == [
        "stats",
        "socket",
        "/a b/s.sock",
        "mode",
        "600",
    ]
    assert split_words(r'acl x path -- "a\"b\$c\x41"') == ["acl", "x", "path", "--", 'a"b$cA']
    assert split_words("x 'no \\escape #here'") == ["x", "no \\escape #here"]
    assert split_words("# only a comment") == []


def test_facts_from_global_section(tmp_path: Path) -> None:
    facts = read_config_facts(make_config(tmp_path), Path("/elsewhere"))
    assert facts.runtime_socket == tmp_path / "stats.sock"
    assert facts.server_state_file == tmp_path / "server-state"


def test_relative_paths_resolve_in_workdir(tmp_path: Path) -> None:
    text = (
        "global\n"
        "    stats socket ipv4@127.0.0.1:9999 level admin\n"
        "    stats socket unix@run/s.sock level operator\n"
        "    stats socket run/admin.sock mode 600 level admin\n"
        "    server-state-base state\n"
        "    server-state-file servers\n"
    )
    facts = read_config_facts(text, tmp_path)
    assert facts.runtime_socket == tmp_path / "run" / "admin.sock"
    assert facts.server_state_file == tmp_path / "state" / "servers"


def test_no_admin_socket_means_none(tmp_path: Path) -> None:
    facts = read_config_facts("global\n    maxconn 10\nfrontend f\n    maxconn 5\n", tmp_path)
    assert facts.runtime_socket is None and facts.server_state_file is None
    assert facts.global_maxconn == 10


def test_weight_and_disabled_are_runtime_changes(tmp_path: Path) -> None:
    old = make_config(tmp_path, weight=1)
    new = make_config(tmp_path, weight=5, disabled=True)
    assert runtime_only_changes(old, new) == [ServerChange("be_p1", "srv_m1", 5, True)]
    assert runtime_only_changes(new, old) == [ServerChange("be_p1", "srv_m1", 1, False)]


def test_comments_and_blank_lines_do_not_count(tmp_path: Path) -> None:
    old = make_config(tmp_path)
    new = "# another header\n\n" + old.replace("global\n", "global\n    # hi\n")
    assert runtime_only_changes(old, new) == []


def test_other_differences_need_a_reload(tmp_path: Path) -> None:
    old = make_config(tmp_path)
    assert runtime_only_changes(old, make_config(tmp_path, timeout_client="9s")) is None
    moved = old.replace("127.0.0.1:9001", "127.0.0.1:9009")
    assert runtime_only_changes(old, moved) is None
    extra = old + "    server srv_m3 127.0.0.1:9003\n"
    assert runtime_only_changes(old, extra) is None
    renamed = make_config(tmp_path, weight=3).replace("backend be_p1", "backend be_p2")
    assert runtime_only_changes(old, renamed) is None
