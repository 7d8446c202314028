"""The mode (``settings.pipeline``) is read in one place: ``backends_class``.

Everything that differs between the embedded and the Kafka mode asks the mode's
backends (``policy_indexer/runtime/backends.py``): the queue's name, the dead
letters, doctor's checks, ``run``. The one other reader is the ``replay``
command, whose ``--to`` option is the user's choice of target with the mode as
its default. The settings package itself (which declares the field) is not a
reader.

Read from the source (``ast``): an attribute ``.pipeline`` on anything, and a
``getattr(..., "pipeline")``, count as reads.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "policy_indexer"

# (module path under the repository, enclosing function) allowed to read the mode
ALLOWED = {
    ("policy_indexer/runtime/backends.py", "backends_class"),
    ("policy_indexer/commands/replay.py", "replay"),  # --to: the user's choice, mode as default
}
NOT_READERS = ("policy_indexer/settings/",)  # declares the field


def mode_reads(tree: ast.AST) -> list[tuple[int, str | None]]:
    """(line, enclosing function or None) of every read of ``.pipeline`` in ``tree``."""
    found: list[tuple[int, str | None]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        if isinstance(node, ast.Attribute) and node.attr == "pipeline":
            found.append((node.lineno, function))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in {"getattr", "hasattr"} and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and node.args[1].value == "pipeline"):
            found.append((node.lineno, function))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, None)
    return found


def readers(root: Path = PACKAGE) -> list[str]:
    """Every read outside the allowed places, as ``path:line (function)``."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name.startswith(NOT_READERS):
            continue
        for line, function in mode_reads(ast.parse(path.read_text(), filename=name)):
            if (name, function) not in ALLOWED:
                bad.append(f"{name}:{line} (in {function or 'the module'})")
    return bad


def test_the_mode_is_read_only_where_the_backends_are_chosen() -> None:
    assert readers() == [], (
        "settings.pipeline read outside backends_class: ask the backends instead "
        "(a method or a class attribute of EmbeddedBackends and KafkaBackends)")


def test_the_check_sees_each_way_of_reading_it() -> None:
    source = (
        "def run(settings):\n"
        "    if settings.pipeline == 'kafka':\n"
        "        pass\n"
        "mode = getattr(settings, 'pipeline')\n"
        "def backends_class(s):\n"
        "    return s.pipeline\n"
    )
    assert mode_reads(ast.parse(source)) == [(2, "run"), (4, None), (6, "backends_class")]
