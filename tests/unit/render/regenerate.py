"""Rewrite the HAProxy golden files from ``golden_cases``.

Run ``python -m tests.unit.render.regenerate`` from the repository root (or the golden test
with ``LBAAS_REGEN_GOLDEN=1``) after a deliberate change to the renderer, then review the
diff of ``tests/golden/haproxy/`` like any other code change. Files of cases that no longer
exist are removed.
"""

from __future__ import annotations

from pathlib import Path

from lbaas.render.haproxy.config import render_haproxy_config

from .golden_cases import CASES, GoldenCase

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "golden" / "haproxy"


def golden_path(case: GoldenCase) -> Path:
    return GOLDEN_DIR / f"{case.name}.cfg"


def render_case(case: GoldenCase) -> str:
    return render_haproxy_config(case.build(), case.ctx)


def regenerate() -> list[Path]:
    """Write every case's golden file; return the files that changed or were removed."""
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    changed: list[Path] = []
    for case in CASES:
        path = golden_path(case)
        text = render_case(case)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(path)
    expected = {golden_path(case) for case in CASES}
    for stale in sorted(set(GOLDEN_DIR.glob("*.cfg")) - expected):
        stale.unlink()
        changed.append(stale)
    return changed


def main() -> None:
    for path in regenerate():
        print(f"updated {path}")


if __name__ == "__main__":
    main()
