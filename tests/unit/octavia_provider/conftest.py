"""The Octavia provider driver is a distribution of its own (octavia-provider/), installed
into Octavia's environment, not lbaas's: its pure parts are tested here from the source
directory. What needs octavia-lib and a real Octavia is in tests/e2e/octavia."""

from __future__ import annotations

import sys
from pathlib import Path

PROVIDER = Path(__file__).resolve().parents[3] / "octavia-provider"
if str(PROVIDER) not in sys.path:
    sys.path.insert(0, str(PROVIDER))
