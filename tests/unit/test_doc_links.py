"""The README and docs/ stay navigable: every relative link reaches a file of the repository.

Documentation moves (the README's benchmark log went to docs/benchmarks.md, the lab's
walk-through to docs/lab.md) and files under it are renamed by refactors; a link that
points at nothing, or at a heading that was reworded, only shows when a reader follows it.
So every Markdown link in README.md and docs/*.md is resolved here: its file must exist
inside the repository, and its ``#anchor`` must be a heading of that file (GitHub's slugs).
A ``../`` path that reaches nothing in the repository (``../shared/…``) is refused, in a link
or in code text, since a reader of the repository has nothing there. The README is the user's first
page and is kept short (at most 200 lines), and its commands table names every ``lbaas``
subcommand.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from lbaas.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 200

_FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", flags=re.M | re.S)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", flags=re.M)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_CLIMBING_PATH = re.compile(r"(?<![\w/.])(?:\.\./)+[\w./-]*[\w-]")


def prose(text: str) -> str:
    """The text without fenced code blocks (links and headings there are not Markdown)."""
    return _FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every heading anchor of a Markdown text, with GitHub's -1, -2 … for repeats."""
    found: set[str] = set()
    for heading in _HEADING.findall(prose(text)):
        base = slug(heading)
        name, n = base, 0
        while name in found:
            n += 1
            name = f"{base}-{n}"
        found.add(name)
    return found


def link_targets(text: str) -> list[str]:
    """The targets of the Markdown links and images of a text, outside code."""
    return _LINK.findall(_CODE_SPAN.sub("", prose(text)))


def broken_links(document: Path, text: str, root: Path) -> list[str]:
    """Each relative link of ``document`` that does not resolve, with the reason."""
    problems: list[str] = []
    for target in link_targets(text):
        if _SCHEME.match(target):
            continue  # http:, https:, mailto: … are not the repository's files
        path_part, _, anchor = target.partition("#")
        resolved = (document.parent / path_part).resolve() if path_part else document
        if not resolved.is_relative_to(root):
            problems.append(f"{target}: outside the repository")
        elif not resolved.exists():
            problems.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
            problems.append(f"{target}: no heading #{anchor} in {resolved.name}")
    return problems


def dangling_paths(document: Path, text: str, root: Path) -> list[str]:
    """Relative ``../`` paths in the text (code spans included) that reach no file of the
    repository from where ``document`` is: ``../README.md`` from docs/ does, while
    ``../shared/…`` names a folder beside the repository that a reader of it has not got."""
    dangling = []
    for path in _CLIMBING_PATH.findall(text):
        resolved = (document.parent / path).resolve()
        if not (resolved.is_relative_to(root) and resolved.exists()):
            dangling.append(path)
    return dangling


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    assert broken_links(document, document.read_text(), ROOT) == []


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_path_climbs_to_nothing(document: Path) -> None:
    assert dangling_paths(document, document.read_text(), ROOT) == []


def test_the_checker_reports_a_missing_file_a_missing_heading_and_an_escape(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "there.md").write_text("# Title\n\n## A `code` heading, here\n")
    page = tmp_path / "docs" / "page.md"
    text = (
        "[ok](there.md#a-code-heading-here) [ok too](there.md) [web](https://example.com/x)\n"
        "[gone](missing.md) [bad anchor](there.md#nope) [escape](../../outside.md)\n"
        "```sh\n[not a link](ignored.md)\n```\n"
    )
    assert broken_links(page, text, tmp_path) == [
        "missing.md: no such file",
        "there.md#nope: no heading #nope in there.md",
        "../../outside.md: outside the repository",
    ]
    (tmp_path / "README.md").write_text("# lbaas\n")
    climbing = "see `../shared/docs/design.md`, ../README.md and ../../up.md"
    assert dangling_paths(page, climbing, tmp_path) == ["../shared/docs/design.md", "../../up.md"]


def test_repeated_headings_get_numbered_anchors() -> None:
    assert anchors("# Notes\n\n## Notes\n\n### Notes\n") == {"notes", "notes-1", "notes-2"}


def test_the_readme_is_short() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"


def _subcommands() -> list[str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(sub.choices)


def test_the_readme_commands_table_names_every_command() -> None:
    readme = README.read_text()
    table_rows = [line for line in readme.splitlines() if line.startswith("| `lbaas ")]
    missing = [
        name
        for name in _subcommands()
        if not any(row.startswith(f"| `lbaas {name}") for row in table_rows)
    ]
    assert missing == [], f"README.md's commands table lacks: {missing}"
