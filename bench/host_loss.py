"""SINGLE host-loss recovery: an alias of ``bench/failover.py --only host_loss``.

    python bench/host_loss.py [--quick] [--host-loss-trials N] [--load-balancers N]

The measurement lives in ``failover_host_loss.py``; ``bench/failover.py`` prints it with
every other failover figure of issue 11.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.argv = [sys.argv[0], "--only", "host_loss", *sys.argv[1:]]
    runpy.run_path(str(Path(__file__).with_name("failover.py")), run_name="__main__")
