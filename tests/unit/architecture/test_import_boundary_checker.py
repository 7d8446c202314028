"""Each check of ``support.import_boundaries`` on a small tree of its own: it catches its case.

The real tree passes every check (``test_import_boundaries.py``); these show that a
check is not a no-op: a tree made to break it is caught, and a tree that keeps it
is not.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

from support.import_boundaries import (
    declared_packages,
    imports,
    installed_dependencies,
    layer_violations,
    non_package_imports,
    shadowed_modules,
    top_level_modules,
    unlisted_folders,
)

MAP = {"low": 0, "high": 1}


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_literal_import_module_or_dunder_import_across_layers_is_caught(tmp_path: Path) -> None:
    root = write(tmp_path, {
        "low/__init__.py": "",
        "low/a.py": (
            "import importlib\n"
            "from importlib import import_module\n"
            "import importlib as il\n"
            "def later(name: str) -> None:\n"
            "    importlib.import_module('high.x')\n"            # 5
            "    __import__('high')\n"                           # 6
            "    import_module('.y', package='high')\n"          # 7
            "    il.import_module(name='high.z')\n"              # 8
            "    import_module(name)\n"                          # not a literal: not seen
            "    importlib.import_module('low.b')\n"             # its own package
            "    importlib.import_module('.b', 'low')\n"
        ),
        "low/b.py": "",
        "high/__init__.py": "import importlib\nimportlib.import_module('low.b')\n",
    })
    assert [name for _, name in imports(root / "low/a.py")] == [
        "importlib", "importlib", "importlib",
        "high.x", "high", "high.y", "high.z", "low.b", "low.b"]
    wrong, _ = layer_violations(root, MAP, {})
    assert [w.split(" (")[0] for w in wrong] == [
        "low/a.py:5 imports high.x", "low/a.py:6 imports high",
        "low/a.py:7 imports high.y", "low/a.py:8 imports high.z"]


def test_statement_imports_across_layers_are_still_caught(tmp_path: Path) -> None:
    root = write(tmp_path, {"low/__init__.py": "def f() -> None:\n    from high import x\n",
                            "high/__init__.py": "from low import f\n"})
    wrong, _ = layer_violations(root, MAP, {})
    assert [w.split(" (")[0] for w in wrong] == ["low/__init__.py:2 imports high"]
    wrong, used = layer_violations(root, MAP, {("low", "high"): "a reason"})
    assert (wrong, used) == ([], {("low", "high")})


def test_an_unlisted_top_level_folder_with_python_is_caught_with_or_without_init(
        tmp_path: Path) -> None:
    root = write(tmp_path, {
        "low/__init__.py": "",
        "newtool/run.py": "",                   # no __init__.py
        "newpkg/__init__.py": "",
        "nested/deep/er/x.py": "",              # Python only deep down
        "stray.py": "",
        "setup.py": "",
        "tests/unit/test_x.py": "",             # known non-package folders
        "clients/sdk.py": "",
        "data/readme.txt": "",                  # no Python
        ".hidden/x.py": "",
        "node_modules/x.py": "",
        "thing.egg-info/x.py": "",
    })
    assert unlisted_folders(root, MAP) == ["nested/", "newpkg/", "newtool/", "stray.py"]
    assert unlisted_folders(root, {**MAP, "newtool": 2, "newpkg": 2, "nested": 2},
                            root_files={"setup.py", "stray.py"}) == []


def test_a_package_importing_tests_bench_or_deploy_code_is_caught(tmp_path: Path) -> None:
    root = write(tmp_path, {
        "low/__init__.py": "",
        "low/a.py": (
            "import yaml\n"
            "import low.b\n"
            "from support.waiting import wait_until\n"      # 3: tests/ is on sys.path
            "import bench.bench_x\n"                        # 4
            "import importlib\n"
            "importlib.import_module('devservices.health')\n"  # 6: deploy/local/ too
            "from tests.support import waiting\n"            # 7
            "import bench_x\n"                               # 8
            "import high\n"
        ),
        "low/b.py": "",
        "high/__init__.py": "",
        "tests/conftest.py": "",
        "tests/support/__init__.py": "",
        "tests/support/waiting.py": "",
        "tests/support/yaml.py": "",                    # shadows an installed name: left out
        "tests/unit/high/test_high.py": "",             # a package's name: left out
        "bench/bench_x.py": "",
        "deploy/local/devservices/__init__.py": "",
        "deploy/local/devservices/health.py": "",
    })
    wrong = non_package_imports(root, MAP, elsewhere={"yaml"})
    assert [w.split(" (")[0] for w in wrong] == [
        "low/a.py:3 imports support.waiting", "low/a.py:4 imports bench.bench_x",
        "low/a.py:6 imports devservices.health", "low/a.py:7 imports tests.support",
        "low/a.py:8 imports bench_x"]
    assert "(that is deploy/local/devservices)" in wrong[2]


def dist_info(site: Path, name: str, *, requires: tuple[str, ...] = (),
              extras: tuple[str, ...] = (), record: tuple[str, ...] = (),
              top_level: tuple[str, ...] = ()) -> None:
    folder = site / f"{name.replace('-', '_')}-1.0.dist-info"
    lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0"]
    lines += [f"Requires-Dist: {r}" for r in requires]
    lines += [f"Provides-Extra: {e}" for e in extras]
    write(folder, {"METADATA": "\n".join(lines) + "\n",
                   "RECORD": "".join(f"{r},,\n" for r in record)})
    if top_level:
        (folder / "top_level.txt").write_text("\n".join(top_level) + "\n", encoding="utf-8")


def test_a_top_level_module_a_dependency_ships_too_is_caught(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist_info(site, "ours", requires=("dep-a>=1", 'dep-x; extra == "test"', "not-installed"),
              extras=("test",), top_level=("events", "store", "helpers", "alone", "pure"))
    dist_info(site, "dep-a", requires=("Dep_B[fast]",),
              record=("events/__init__.py", "dep_a-1.0.dist-info/RECORD", "../../bin/a"))
    dist_info(site, "dep_b", requires=('dep-c; extra == "fast"', 'dep-d; extra == "slow"'),
              record=("store.cpython-311-x86_64-linux-gnu.so",))
    dist_info(site, "dep-c", record=("pure.py", "README.md"))
    dist_info(site, "dep-d", record=("alone/__init__.py",))      # extra not asked for
    dist_info(site, "dep-x", record=("helpers/__init__.py",))    # ours' own extra
    dist_info(site, "unrelated", record=("alone/__init__.py",))  # installed, not a dependency
    ours = next(iter(metadata.distributions(name="ours", path=[str(site)])))

    dependencies = installed_dependencies(ours, path=[str(site)])
    assert sorted(dependencies) == ["dep-a", "dep-b", "dep-c", "dep-x"]
    assert top_level_modules(dependencies["dep-b"]) == {"store"}
    assert shadowed_modules(top_level_modules(ours), dependencies) == [
        "events: also installed by dep-a 1.0", "store: also installed by dep-b 1.0",
        "pure: also installed by dep-c 1.0", "helpers: also installed by dep-x 1.0"]
    assert shadowed_modules({"alone"}, dependencies) == []


def test_the_declared_packages_are_read_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.setuptools.packages.find]\ninclude = ["low*", "high", "deep.*"]\n', encoding="utf-8")
    assert declared_packages(tmp_path / "pyproject.toml") == {"low", "high", "deep"}
