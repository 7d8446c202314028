"""The package map of docs/architecture.md, enforced: dependencies point from the edges to the core.

Every module of every top-level package is parsed (not imported) and each
``import`` checked against ``LAYER``: a package may import only packages of a
lower layer. Imports inside functions count too (a lazy import is still a
dependency). Besides the layers:

- nothing imports ``policy_indexer.commands`` but ``policy_indexer.cli``, and
  commands import no other command (the composition root is ``runtime``);
- no package below ``policy_indexer`` imports it (core packages never read
  settings: the runtime passes values down);
- production code never imports the test fakes (``store.memory``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# Lower layers are the core; a package may import only packages of lower layers.
LAYER: dict[str, int] = {
    "sqlitedb": 0,
    "events": 1, "analysis": 1, "embeddings": 1,
    "chunker": 2, "transport": 2,
    "store": 3,
    "deleter": 4, "sources": 4,
    "indexing": 5, "metrics": 5, "retrieval": 5,
    "reindex": 6, "consumers": 6, "webhooks": 6, "watcher": 6,
    "policy_indexer": 7,
}

# Known crossings, each with the reason it is still there. The list may only shrink.
KNOWN: dict[tuple[str, str], str] = {}

# In-memory implementations of our own interfaces, for tests; they may import each other.
TEST_FAKES = ("store.memory", "store.memory_search")


def imports(path: Path) -> Iterator[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module


def modules() -> Iterator[tuple[str, Path]]:
    for package in LAYER:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield package, path


def test_every_top_level_package_has_a_layer() -> None:
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    unlisted = packages - set(LAYER) - {"tests", "bench", "deploy", "eval", "scripts"}
    assert not unlisted, f"add {sorted(unlisted)} to LAYER and to docs/architecture.md"


def test_dependencies_point_from_the_edges_to_the_core() -> None:
    wrong: list[str] = []
    used_known: set[tuple[str, str]] = set()
    for package, path in modules():
        for line, name in imports(path):
            target = name.split(".")[0]
            if target not in LAYER or target == package:
                continue
            if LAYER[target] < LAYER[package]:
                continue
            if (package, target) in KNOWN:
                used_known.add((package, target))
                continue
            wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name} "
                         f"({package} is layer {LAYER[package]}, {target} is {LAYER[target]})")
    assert not wrong, "imports against the package map:\n" + "\n".join(wrong)
    stale = set(KNOWN) - used_known
    assert not stale, f"remove the mended crossings {sorted(stale)} from KNOWN"


def test_nothing_imports_a_command_but_the_cli() -> None:
    wrong = []
    for _package, path in modules():
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
        for _package, path in modules()
        if path not in fakes
        for line, name in imports(path)
        if name == fake or name.startswith(fake + ".")
    ]
    assert not wrong, f"{fake} is a test fake; production imports it at {wrong}"
