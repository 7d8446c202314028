"""Every POLICY_INDEXER_* variable the deployment files and docs name is a real setting.

A misspelt variable in a chart, a unit or a compose file is ignored with a
warning at start and the process runs on the default (plaintext Kafka, no
credentials): found here, not in production.
"""

from __future__ import annotations

import re
from pathlib import Path

from policy_indexer.settings import PREFIX, Settings

ROOT = Path(__file__).resolve().parents[3]
NAME = re.compile(r"POLICY_INDEXER_[A-Z0-9_]*[A-Z0-9]")
# deploy/local/services' own variables share the prefix and are no settings.
LOCAL = "POLICY_INDEXER_LOCAL_"


def named_files() -> list[Path]:
    files = [p for p in (ROOT / "deploy").rglob("*")
             if p.is_file() and "local" not in p.relative_to(ROOT / "deploy").parts[:1]]
    files += list((ROOT / "docs").rglob("*.md"))
    files += [ROOT / "README.md", ROOT / "Dockerfile"]
    return files


def test_every_variable_named_in_deploy_and_docs_is_a_setting() -> None:
    known = {PREFIX + name.upper() for name in Settings.model_fields}
    unknown: dict[str, list[str]] = {}
    seen = 0
    for path in named_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for name in NAME.findall(text):
            seen += 1
            if name not in known and not name.startswith(LOCAL):
                unknown.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert seen > 50, f"only {seen} names found: the scan looks in the wrong place"
    assert unknown == {}, f"not settings: {unknown}"
