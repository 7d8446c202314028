"""The image's lock file is pyproject.toml's dependencies, pinned with hashes.

``deploy/image/lock.py --check`` runs offline: it compares the requirements the lock's
header says it was compiled from with pyproject.toml's, checks every direct dependency
is pinned to a version its specifier allows and that every pin has a hash. A dependency
added, dropped or re-ranged in pyproject.toml without regenerating the lock fails here.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[3]
LOCK_TOOL = REPO_ROOT / "deploy" / "image" / "lock.py"
LOCK = REPO_ROOT / "deploy" / "image" / "requirements.lock"


def lock_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("image_lock", LOCK_TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_lock_matches_pyproject() -> None:
    result = subprocess.run([sys.executable, str(LOCK_TOOL), "--check"], cwd=REPO_ROOT,
                            capture_output=True, text=True, check=False, timeout=60)
    assert result.returncode == 0, result.stderr


def test_every_pin_is_exact_and_hashed_and_nothing_is_fetched_from_elsewhere() -> None:
    text = LOCK.read_text(encoding="utf-8")
    entries = [line for line in text.splitlines() if line and not line[0].isspace()
               and not line.startswith("#")]
    assert len(entries) > 30
    for entry in entries:
        assert re.fullmatch(r"[A-Za-z0-9._-]+(\[[a-z0-9,-]+\])?==[^ ;]+( ; .+)? \\", entry), entry
    assert not re.search(r"(?m)^-(e|-index-url|-extra-index-url|-find-links)|file:", text)


def pyproject_with(tmp_path: Path, old: str, new: str) -> Path:
    text = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert old in text
    changed = tmp_path / "pyproject.toml"
    changed.write_text(text.replace(old, new, 1), encoding="utf-8")
    return changed


def test_a_dependency_changed_without_the_lock_is_found(tmp_path: Path) -> None:
    tool = lock_tool()
    added = pyproject_with(tmp_path, '"click>=8.1",', '"click>=8.1",\n    "rich>=13",')
    found = tool.problems(added, LOCK)
    assert "pyproject.toml requires 'rich>=13', the lock was compiled without it" in found
    assert "rich is not pinned in the lock" in found
    assert found[-1] == "regenerate it: .venv/bin/python deploy/image/lock.py"
    ranged = pyproject_with(tmp_path, '"click>=8.1",', '"click>=8.1,<8.2",')
    assert any("the lock was compiled from 'click>=8.1'" in p for p in tool.problems(ranged, LOCK))
    assert any(re.fullmatch(r"click==[\d.]+ in the lock is outside <8.2,>=8.1", p)
               for p in tool.problems(ranged, LOCK))


def test_a_pin_without_its_hash_is_found(tmp_path: Path) -> None:
    tool = lock_tool()
    text = LOCK.read_text(encoding="utf-8")
    unhashed = re.sub(r"(?m)^(click==\S+) \\\n(    --hash=\S+ \\\n)*    --hash=\S+\n", r"\1\n",
                      text)
    assert unhashed != text
    lock = tmp_path / "requirements.lock"
    lock.write_text(unhashed, encoding="utf-8")
    assert any(re.fullmatch(r"click==[\d.]+ has no --hash", p)
               for p in tool.problems(REPO_ROOT / "pyproject.toml", lock))
