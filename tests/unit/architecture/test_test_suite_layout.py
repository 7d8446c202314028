"""The test suite's own layout, checked statically.

- No module of ``tests/support/`` is named like a top-level package of this repository,
  a module of the standard library or a module an installed distribution ships: a script
  run from that folder (``support/faulty_cli.py``) has it first on ``sys.path``, where
  such a module would hide the real one.
- A test that reaches a service fixture (``kafka_bootstrap``, ``elasticsearch_url``,
  ``prometheus_url``; directly, through other fixtures such as ``pipeline``, or by a
  literal ``getfixturevalue``) carries the ``services`` marker: ``-m "not services"``
  then never needs ``deploy/local/services``.
- An integration test in a module that starts a process (the CLI, a worker, a server)
  carries ``slow`` or ``services``: ``-m "not services and not slow"`` starts nothing.

Both are read from the source (``ast``), not by collecting: what a param of a
parametrized fixture gets by ``getfixturevalue`` is covered by that param's marks.
"""

from __future__ import annotations

import ast
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


# The fixtures that reach a service of deploy/local/services: a test that asks for one,
# directly, through other fixtures or by a literal ``request.getfixturevalue``, needs it.
SERVICE_FIXTURES = frozenset({"kafka_bootstrap", "elasticsearch_url", "prometheus_url"})
# What keeps a test out of the fast suite (``-m "not services and not slow"``).
NEEDS_SERVICES = frozenset({"services", "cluster"})
OUT_OF_THE_FAST_SUITE = NEEDS_SERVICES | {"slow"}
# Support modules that start processes: the CLI, workers, servers (``subprocess.Popen``;
# ``search_cli`` runs the CLI's commands).
PROCESS_STARTERS = frozenset({"support.workers", "support.embedded_run", "support.monitoring",
                              "support.search_cli"})


def _marks(nodes: list[ast.expr]) -> set[str]:
    """Every ``pytest.mark.NAME`` written in ``nodes`` (decorators, ``pytestmark``)."""
    found = set()
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) \
                    and sub.value.attr == "mark":
                found.add(sub.attr)
    return found


def _pytestmark(body: list[ast.stmt]) -> set[str]:
    return _marks([s.value for s in body if isinstance(s, ast.Assign)
                   and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in s.targets)])


def _requested(fn: ast.FunctionDef | ast.AsyncFunctionDef, *, body: bool = True) -> set[str]:
    """The fixtures a function asks for: its arguments, ``usefixtures`` and (``body``)
    literal ``request.getfixturevalue("NAME")`` calls in its body."""
    names = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    for node in [*fn.decorator_list, *(fn.body if body else [])]:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) \
                    and sub.func.attr in ("getfixturevalue", "usefixtures"):
                names |= {a.value for a in sub.args
                          if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return names - {"self", "request"}


def _fixtures(tree: ast.Module) -> dict[str, set[str]]:
    """The fixtures a module defines, each with the fixtures it asks for. A fixture whose
    ``params`` mark some ``services`` asks for the services in those only: what its body
    gets by ``getfixturevalue`` is left out (its arguments are for every param)."""
    found = {}
    for fn in tree.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in fn.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            target = call.func if call else decorator
            if isinstance(target, ast.Attribute) and target.attr == "fixture":
                named = [k.value.value for k in (call.keywords if call else [])
                         if k.arg == "name" and isinstance(k.value, ast.Constant)]
                guarded = any(k.arg == "params" and _marks([k.value]) & NEEDS_SERVICES
                              for k in (call.keywords if call else []))
                found[str(named[0]) if named else fn.name] = _requested(fn, body=not guarded)
    return found


def _tests(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, set[str]]]:
    """Each test function with the marks that apply to it (module, class, its own)."""
    module = _pytestmark(tree.body)
    found = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name.startswith("test"):
            found.append((node.name, node, module | _marks(node.decorator_list)))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            klass = module | _marks(node.decorator_list) | _pytestmark(node.body)
            found += [(f"{node.name}.{fn.name}", fn, klass | _marks(fn.decorator_list))
                      for fn in node.body if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and fn.name.startswith("test")]
    return found


def services_unmarked(path: Path, tests_root: Path) -> list[str]:
    """Tests of ``path`` that reach a service fixture without a ``services`` (or
    ``cluster``) marker. Fixtures come from the module and the ``conftest.py`` files
    from ``tests_root`` down to it (the nearest definition wins, as in pytest)."""
    scopes = [tests_root, *[p for p in reversed(path.parents) if tests_root in p.parents]]
    definitions: dict[str, set[str]] = {}
    for folder in scopes:
        conftest = folder / "conftest.py"
        if conftest.is_file():
            definitions.update(_fixtures(ast.parse(conftest.read_text())))
    tree = ast.parse(path.read_text())
    definitions.update(_fixtures(tree))

    def reaches(name: str, seen: frozenset[str]) -> bool:
        if name in SERVICE_FIXTURES:
            return True
        if name in seen:
            return False
        return any(reaches(d, seen | {name}) for d in definitions.get(name, ()))

    return [f"{path.relative_to(tests_root.parent)}::{name} (asks for {sorted(needed)})"
            for name, fn, marks in _tests(tree)
            if not marks & NEEDS_SERVICES
            and (needed := {f for f in _requested(fn) if reaches(f, frozenset())})]


def process_starters_unmarked(path: Path, root: Path) -> list[str]:
    """Tests of ``path`` with neither ``slow`` nor ``services`` in a module that starts a
    process (``subprocess.Popen``, or a support module that does)."""
    tree = ast.parse(path.read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    popen = any(isinstance(n, ast.Attribute) and n.attr == "Popen" for n in ast.walk(tree))
    starts = popen or bool(imported & PROCESS_STARTERS)
    return [f"{path.relative_to(root)}::{name}" for name, _fn, marks in _tests(tree)
            if starts and not marks & OUT_OF_THE_FAST_SUITE]


def test_a_test_that_reaches_a_service_is_marked_services() -> None:
    modules = sorted((ROOT / "tests").rglob("test_*.py"))
    assert len(modules) > 100
    wrong = [line for path in modules for line in services_unmarked(path, ROOT / "tests")]
    assert not wrong, ("mark these pytest.mark.services (the fast suite, -m 'not services', "
                       "runs with nothing started):\n" + "\n".join(wrong))


def test_an_integration_test_that_starts_a_process_is_out_of_the_fast_suite() -> None:
    modules = sorted((ROOT / "tests" / "integration").glob("test_*.py"))
    wrong = [line for path in modules for line in process_starters_unmarked(path, ROOT)]
    assert not wrong, ("these start a process (the CLI, a worker, a server): mark them "
                       "pytest.mark.slow (or services if they need the services):\n"
                       + "\n".join(wrong))


def test_the_checks_see_what_they_claim(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "integration").mkdir(parents=True)
    (tests / "conftest.py").write_text(
        "import pytest\n@pytest.fixture\ndef pipeline(kafka_bootstrap): ...\n")
    module = tests / "integration" / "test_x.py"
    module.write_text(
        "import subprocess\nimport pytest\n"
        "@pytest.fixture(name='es')\ndef _es(request):\n"
        "    return request.getfixturevalue('elasticsearch_url')\n"
        "def test_indirect(pipeline): ...\n"
        "def test_named(es): ...\n"
        "@pytest.mark.services\ndef test_marked(pipeline): ...\n"
        "class TestGroup:\n    pytestmark = pytest.mark.services\n"
        "    def test_in_class(self, es): ...\n"
        "def test_plain(tmp_path): subprocess.Popen(['x'])\n"
        "@pytest.mark.slow\ndef test_slow(tmp_path): ...\n"
        "@pytest.fixture(params=['a', pytest.param('b', marks=pytest.mark.services)])\n"
        "def backend(request):\n"
        "    return request.getfixturevalue('kafka_bootstrap')\n"
        "def test_guarded_params(backend): ...\n")
    here = "tests/integration/test_x.py::"
    assert [w.split(" ")[0] for w in services_unmarked(module, tests)] == [
        here + "test_indirect", here + "test_named"]
    assert process_starters_unmarked(module, tmp_path) == [
        here + "test_indirect", here + "test_named", here + "test_plain",
        here + "test_guarded_params"]


def test_no_two_test_modules_share_a_name() -> None:
    """Test folders have no ``__init__.py``, so pytest imports each test module by its file
    name alone: two with one name stop a whole run at collection ("import file mismatch")."""
    seen: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        if "__pycache__" in path.parts:
            continue
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
