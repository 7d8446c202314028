"""The test suite's own layout, checked statically.

- No module of ``tests/support/`` is named like a top-level package of this repository,
  a module of the standard library or a module an installed distribution ships: a script
  run from that folder (``support/faulty_cli.py``) has it first on ``sys.path``, where
  such a module would hide the real one.
"""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from support.import_boundaries import LAYER, NON_PACKAGE_FOLDERS

ROOT = Path(__file__).resolve().parents[3]
SUPPORT = ROOT / "tests" / "support"


def _taken_names() -> dict[str, str]:
    """Top-level module names already taken, each with who takes it."""
    taken = {name: "the standard library" for name in sys.stdlib_module_names}
    taken.update({name: f"installed by {', '.join(sorted(set(dists)))}"
                  for name, dists in metadata.packages_distributions().items()})
    taken.update({path.name: f"the repository's {path.name}/" for path in ROOT.iterdir()
                  if path.is_dir() and not path.name.startswith(".")})
    taken.update({name: "a package of the layer map" for name in LAYER})
    taken.update({name: "a non-package folder" for name in NON_PACKAGE_FOLDERS})
    return taken


def test_no_support_module_is_named_like_a_package() -> None:
    stems = {path.stem for path in SUPPORT.glob("*.py")} - {"__init__"}
    assert "waiting" in stems  # not vacuous: the folder was found
    taken = _taken_names()
    assert {"sources", "webhooks", "json", "pytest"} <= set(taken)  # nor is the other side
    clashes = sorted(f"tests/support/{stem}.py: {stem} is {taken[stem]}"
                     for stem in stems if stem in taken)
    assert not clashes, "rename these support modules (a name no package has):\n" + "\n".join(
        clashes)
