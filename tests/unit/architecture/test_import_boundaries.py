"""The package map of docs/architecture.md, enforced: dependencies point from the edges to the core.

The checker is ``support.import_boundaries`` (what it parses and what it finds is
said there); ``LAYER`` is the map. Besides the layers:

- nothing imports ``policy_indexer.commands`` but ``policy_indexer.cli``, and
  commands import no other command (the composition root is ``runtime``);
- no package below ``policy_indexer`` imports it (core packages never read
  settings: the runtime passes values down);
- production code never imports the test fakes (``store.memory``);
- every top-level folder holding Python is in the map or a known non-package folder;
- no package imports code of ``tests/``, ``bench/``, ``deploy/`` and the like;
- no top-level module of the installed distribution is one a dependency ships too.

``test_import_boundary_checker.py`` runs each check on a small tree of its own.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest
from support.import_boundaries import (
    KNOWN,
    LAYER,
    NON_PACKAGE_FOLDERS,
    TEST_FAKES,
    declared_packages,
    imports,
    installed_dependencies,
    layer_violations,
    modules,
    non_package_imports,
    shadowed_modules,
    top_level_modules,
    unlisted_folders,
)

ROOT = Path(__file__).resolve().parents[3]
DISTRIBUTION = "policy-indexer"


def test_every_top_level_folder_with_python_has_a_layer() -> None:
    unlisted = unlisted_folders(ROOT)
    assert not unlisted, (
        f"add {unlisted} to LAYER (support/import_boundaries.py) and to docs/architecture.md, "
        f"or, if it is no package, to NON_PACKAGE_FOLDERS ({sorted(NON_PACKAGE_FOLDERS)})")


def test_dependencies_point_from_the_edges_to_the_core() -> None:
    wrong, used_known = layer_violations(ROOT)
    assert not wrong, "imports against the package map:\n" + "\n".join(wrong)
    stale = set(KNOWN) - used_known
    assert not stale, f"remove the mended crossings {sorted(stale)} from KNOWN"


def test_nothing_imports_a_command_but_the_cli() -> None:
    wrong = []
    for _package, path in modules(ROOT):
        rel = path.relative_to(ROOT).as_posix()
        for line, name in imports(path):
            if not name.startswith("policy_indexer.commands"):
                continue
            if rel == "policy_indexer/cli.py" and name == "policy_indexer.commands":
                continue
            wrong.append(f"{rel}:{line} imports {name}")
    assert not wrong, "commands are leaves (runtime is the composition root):\n" + "\n".join(wrong)


@pytest.mark.parametrize("fake", TEST_FAKES)
def test_production_code_never_imports_a_test_fake(fake: str) -> None:
    fakes = {ROOT / (f.replace(".", "/") + ".py") for f in TEST_FAKES}
    wrong = [
        f"{path.relative_to(ROOT)}:{line}"
        for _package, path in modules(ROOT)
        if path not in fakes
        for line, name in imports(path)
        if name == fake or name.startswith(fake + ".")
    ]
    assert not wrong, f"{fake} is a test fake; production imports it at {wrong}"


def test_no_package_imports_tests_bench_or_deploy_code() -> None:
    ours = set(LAYER)
    elsewhere = set(metadata.packages_distributions()) - ours
    wrong = non_package_imports(ROOT, elsewhere=elsewhere)
    assert not wrong, "packages never import tests/, bench/, deploy/ code:\n" + "\n".join(wrong)


def test_no_installed_top_level_module_is_one_a_dependency_ships() -> None:
    dist = metadata.distribution(DISTRIBUTION)
    declared = declared_packages(ROOT / "pyproject.toml")
    assert declared == set(LAYER), "pyproject.toml's packages and LAYER name the same packages"
    own = declared | set((dist.read_text("top_level.txt") or "").split())
    dependencies = installed_dependencies(dist)
    # Not vacuous: the walk reaches direct and indirect dependencies and reads their files.
    assert {"pydantic", "pydantic-core", "starlette"} <= set(dependencies)
    assert "pydantic" in top_level_modules(dependencies["pydantic"])
    clashes = shadowed_modules(own, dependencies)
    assert not clashes, "a dependency installs a module of the same name:\n" + "\n".join(clashes)
