"""``python3 -m workbench.sim.server``: the simulated SGLang server, run from the repository.

Puts ``workbench/sim`` on ``sys.path`` so the mirrored ``sglang`` tree (and its stand-in ``torch``)
import as top-level packages, exactly as on the simulated hosts where the unit runs
``python3 -m sglang.launch_server`` with ``PYTHONPATH=/opt/sglang-sim``.
"""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


def main() -> None:
    from sglang.launch_server import main as launch_main

    launch_main()


if __name__ == "__main__":
    main()
