"""The checker behind the package map of docs/architecture.md (``tests/unit/architecture``).

Every module of every top-level package is parsed (not imported) and each import
checked. An import is an ``import`` or ``from ... import`` statement anywhere in
the module (inside a function too: a lazy import is still a dependency), or a call
of ``importlib.import_module`` / ``__import__`` with a literal module name (a
relative one resolved against a literal ``package``). A name built at run time is
not seen.

What the checks find:

- ``layer_violations``: a package importing one of its own or a higher layer;
- ``unlisted_folders``: a top-level folder holding Python files (with or without
  ``__init__.py``, at any depth) that is neither in the layer map nor a known
  non-package folder, and a stray top-level ``.py`` file;
- ``non_package_imports``: a package importing code of a non-package folder
  (``tests/``, ``bench/``, ``deploy/``, ...): the folder itself, or a module that
  sits at a root those folders put on ``sys.path`` (``support``, ``devservices``);
- ``shadowed_modules``: a top-level module of this distribution that an installed
  dependency (direct or not) ships too, so one of them hides the other.

Each function takes the tree's root (and the maps), so the tests can run it on a
small tree of their own and show it catches what it claims.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# Lower layers are the core; a package may import only packages of lower layers.
LAYER: dict[str, int] = {
    "sqlitedb": 0, "foundation": 0,
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

# Top-level folders that are no package of the distribution. Their code may import
# the packages; no package may import theirs.
NON_PACKAGE_FOLDERS = frozenset({
    "tests", "bench", "deploy", "scripts", "docs", "examples", "eval", "clients", "alerts",
})

# Top-level files a tool looks for by name; any other top-level .py is a stray module.
KNOWN_ROOT_FILES = frozenset({"setup.py", "conftest.py", "noxfile.py"})

# Never walked: virtualenvs, caches, build output, vendored JavaScript.
_SKIPPED_DIRS = frozenset({"__pycache__", "node_modules", "build", "dist", "venv"})

_DYNAMIC_IMPORTS = frozenset({"import_module", "__import__"})


def _literal(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _argument(call: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _dynamic_import(call: ast.Call) -> str | None:
    """The module a literal ``import_module(...)`` or ``__import__(...)`` call names."""
    func = call.func
    called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(
        func, ast.Attribute) else None
    if called not in _DYNAMIC_IMPORTS:
        return None
    name = _literal(_argument(call, 0, "name"))
    if name is None or not name.startswith("."):
        return name
    if called != "import_module":  # __import__'s relative form needs a caller's globals
        return None
    package = _literal(_argument(call, 1, "package"))
    if package is None:
        return None
    try:
        return importlib.util.resolve_name(name, package)
    except (ImportError, ValueError):
        return None


def imports(path: Path) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path`` the parser can see, in order."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call):
            name = _dynamic_import(node)
            if name:
                found.append((node.lineno, name))
    yield from sorted(found)


def modules(root: Path, layer: Mapping[str, int] = LAYER) -> Iterator[tuple[str, Path]]:
    """(package, file) of every module of every package in the layer map."""
    for package in layer:
        for path in sorted((root / package).rglob("*.py")):
            yield package, path


def layer_violations(
    root: Path, layer: Mapping[str, int] = LAYER,
    known: Mapping[tuple[str, str], str] = KNOWN,
) -> tuple[list[str], set[tuple[str, str]]]:
    """Imports against the map, and the known crossings that were met."""
    wrong: list[str] = []
    used_known: set[tuple[str, str]] = set()
    for package, path in modules(root, layer):
        for line, name in imports(path):
            target = name.split(".")[0]
            if target not in layer or target == package:
                continue
            if layer[target] < layer[package]:
                continue
            if (package, target) in known:
                used_known.add((package, target))
                continue
            wrong.append(f"{path.relative_to(root)}:{line} imports {name} "
                         f"({package} is layer {layer[package]}, {target} is {layer[target]})")
    return wrong, used_known


def _walk(folder: Path) -> Iterator[tuple[Path, list[str], list[str]]]:
    for dirpath, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED_DIRS
                         and not d.endswith(".egg-info"))
        yield Path(dirpath), dirs, files


def _holds_python(folder: Path) -> bool:
    return any(f.endswith(".py") for _, _, files in _walk(folder) for f in files)


def unlisted_folders(
    root: Path, layer: Mapping[str, int] = LAYER,
    non_packages: Iterable[str] = NON_PACKAGE_FOLDERS,
    root_files: Iterable[str] = KNOWN_ROOT_FILES,
) -> list[str]:
    """Top-level folders with Python in them that no map names, and stray top-level modules."""
    known = set(layer) | set(non_packages)
    found: list[str] = []
    for entry in sorted(root.iterdir()):
        name = entry.name
        if name.startswith(".") or name in known:
            continue
        if entry.is_dir():
            if name not in _SKIPPED_DIRS and not name.endswith(".egg-info") \
                    and _holds_python(entry):
                found.append(f"{name}/")
        elif name.endswith(".py") and name not in set(root_files):
            found.append(name)
    return found


def non_package_modules(
    root: Path, layer: Mapping[str, int] = LAYER,
    non_packages: Iterable[str] = NON_PACKAGE_FOLDERS,
    elsewhere: Iterable[str] = (),
) -> dict[str, str]:
    """Module names that stand for code of a non-package folder, with where each lives.

    The folder's own name, and every top-level module of each of its directories
    that is not inside a regular package: the roots that pytest, the benchmarks and
    the deploy scripts put on ``sys.path`` (``tests/`` gives ``support``,
    ``deploy/local/`` gives ``devservices``). Names of the layer map, of the standard
    library and in ``elsewhere`` (what installed distributions ship) are left out:
    such an import means that module, not the folder's.
    """
    skip = set(layer) | set(sys.stdlib_module_names) | set(elsewhere)
    found: dict[str, str] = {}
    for folder in sorted(non_packages):
        base = root / folder
        if not base.is_dir():
            continue
        found.setdefault(folder, f"{folder}/")
        for here, dirs, files in _walk(base):
            if (here / "__init__.py").is_file():
                continue  # inside a package: its modules are reached through it
            candidates = [(f[:-3], here / f) for f in files if f.endswith(".py")]
            candidates += [(d, here / d) for d in dirs if _holds_python(here / d)]
            for name, where in candidates:
                if name.isidentifier() and name not in skip:
                    found.setdefault(name, where.relative_to(root).as_posix())
    return found


def non_package_imports(
    root: Path, layer: Mapping[str, int] = LAYER,
    non_packages: Iterable[str] = NON_PACKAGE_FOLDERS,
    elsewhere: Iterable[str] = (),
) -> list[str]:
    """Imports of tests/, bench/, deploy/ (...) code by a package."""
    foreign = non_package_modules(root, layer, non_packages, elsewhere)
    wrong: list[str] = []
    for _package, path in modules(root, layer):
        for line, name in imports(path):
            top = name.split(".")[0]
            if top in foreign:
                wrong.append(f"{path.relative_to(root)}:{line} imports {name} "
                             f"(that is {foreign[top]})")
    return wrong


# -- the installed distribution against its dependencies ------------------------------------

def declared_packages(pyproject: Path) -> set[str]:
    """Top-level package names ``[tool.setuptools.packages.find] include`` ships."""
    config = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    include: list[str] = config["tool"]["setuptools"]["packages"]["find"]["include"]
    return {pattern.split(".")[0].rstrip("*") for pattern in include} - {""}


def top_level_modules(dist: metadata.Distribution) -> set[str]:
    """The top-level module names ``dist`` installs: its ``top_level.txt`` and its files."""
    names = set((dist.read_text("top_level.txt") or "").split())
    for file in dist.files or ():
        parts = file.parts
        if not parts or parts[0] in ("..", "__pycache__") \
                or parts[0].endswith((".dist-info", ".egg-info", ".data")):
            continue
        if not parts[-1].endswith((".py", ".pyc", ".so", ".pyd")):
            continue
        names.add(parts[0].split(".")[0] if len(parts) == 1 else parts[0])
    return {n for n in names if n.isidentifier()}


def _finder(path: list[str] | None) -> Callable[[str], metadata.Distribution | None]:
    def find(name: str) -> metadata.Distribution | None:
        found = metadata.distributions(name=name) if path is None \
            else metadata.distributions(name=name, path=path)
        return next(iter(found), None)
    return find


def installed_dependencies(
    dist: metadata.Distribution, path: list[str] | None = None,
) -> dict[str, metadata.Distribution]:
    """Every installed distribution ``dist`` needs, directly or not, with all its extras.

    A requirement that is not installed ships nothing to collide with and is left out.
    """
    find = _finder(path)
    own = canonicalize_name(dist.metadata["Name"])
    found: dict[str, metadata.Distribution] = {}
    todo: list[tuple[metadata.Distribution, list[str]]] = [
        (dist, ["", *(dist.metadata.get_all("Provides-Extra") or [])])]
    while todo:
        current, extras = todo.pop()
        for spec in current.requires or ():
            requirement = Requirement(spec)
            marker = requirement.marker
            if marker is not None and not any(marker.evaluate({"extra": e}) for e in extras):
                continue
            key = canonicalize_name(requirement.name)
            if key == own or key in found:
                continue
            dependency = find(requirement.name)
            if dependency is None:
                continue
            found[key] = dependency
            todo.append((dependency, ["", *sorted(requirement.extras)]))
    return found


def shadowed_modules(
    own: Iterable[str], dependencies: Mapping[str, metadata.Distribution],
) -> list[str]:
    """Each of ``own`` that a dependency ships too, naming the dependency."""
    own = set(own)
    clashes: list[str] = []
    for key, dependency in sorted(dependencies.items()):
        for name in sorted(own & top_level_modules(dependency)):
            clashes.append(f"{name}: also installed by {key} {dependency.version}")
    return clashes
