"""Write docs/configuration.md from the settings classes, or check it is current."""

from __future__ import annotations

import sys
from pathlib import Path

from lbaas.config_reference import render_reference

TARGET = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def main() -> int:
    text = render_reference()
    if "--check" in sys.argv:
        if not TARGET.exists() or TARGET.read_text() != text:
            print("docs/configuration.md is stale: run python tools/config_reference.py")
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
