"""``policy-indexer`` with the crash hook armed: the failure tests' entry point.

    python tests/support/faulty_cli.py run        # with TEST_FAULT_KILL_AT=after-state-write:1

The production command cannot arm the hook (no setting or variable of its own
does); this script installs ``TEST_FAULT_KILL_AT`` into
``policy_indexer.runtime.faults`` and then runs the ordinary command line.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from policy_indexer.cli import main
from policy_indexer.runtime import faults

FAULT_ENV = "TEST_FAULT_KILL_AT"
SCRIPT = str(Path(__file__).resolve())


def command(*args: str) -> list[str]:
    """The argv that runs ``policy-indexer ARGS`` through this entry point.

    The script's folder (tests/support) comes first on ``sys.path``: no module there is
    named like a package (``tests/unit/architecture/test_test_suite_layout.py``).
    """
    return [sys.executable, SCRIPT, *args]


if __name__ == "__main__":
    faults.install(os.environ.get(FAULT_ENV))
    sys.exit(main(prog_name="policy-indexer"))
