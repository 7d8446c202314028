"""An ``access_labels`` default per folder, end to end on ``policy-indexer run``.

``POLICY_INDEXER_SOURCE_DEFAULT_ACCESS_LABELS='hr/**=staff; **=public'``: a file under
``hr/`` that sets no labels is indexed for ``staff`` only, a public caller never gets it
(without the setting it was unlabelled: everyone saw it); a file under ``hr/`` that names
its own labels keeps them; a file elsewhere is ``public``; an ``hr/`` file with an empty
``access_labels:`` is still refused (dead letter), not defaulted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.embedded_run import EmbeddedRun, clean_env
from support.waiting import wait_until
from support.workers import free_port

pytestmark = pytest.mark.slow

FILES = {
    "hr/pay-bands.md": "---\ntitle: Pay bands\nversion: 2\n---\n## Pay bands\n"
                       "The quokka pay bands are reviewed every March.\n",
    "hr/holidays.md": "---\ntitle: Holidays\nversion: 2\naccess_labels: [public]\n---\n"
                      "## Holidays\nThe quokka office closes on public holidays.\n",
    "hr/empty.md": "---\ntitle: Empty labels\nversion: 2\naccess_labels:\n---\n## Empty\n"
                   "The quokka bonus codes are secret.\n",
    "refunds.md": "---\ntitle: Refunds\nversion: 2\n---\n## Refunds\n"
                  "Quokka riders get refunds within 30 days.\n",
}


@pytest.fixture
def embedded(tmp_path: Path) -> EmbeddedRun:
    root = tmp_path / "library"
    for relative, text in FILES.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")
    port = free_port()
    env = clean_env(embedded_dir=str(tmp_path / "data"), source_kind="folder",
                    source_path=str(root), metrics_port=str(port), search_encoder="none",
                    log_level="WARNING", watch_rescan_seconds="0.5",
                    monitor_interval_seconds="0.5",
                    source_default_access_labels="hr/**=staff; **=public")
    return EmbeddedRun(root, tmp_path / "data", env, port, tmp_path)


def search(embedded: EmbeddedRun, question: str, labels: str) -> dict[str, set[str]]:
    """Document id -> the labels of its passages, for ``question`` as ``labels`` sees it."""
    done = embedded.cli("search", question, "--labels", labels, "--json")
    assert done.returncode in (0, 1), done.stderr[-2000:]
    answer: dict[str, Any] = json.loads(done.stdout)
    found: dict[str, set[str]] = {}
    for passage in answer.get("passages", []):
        found.setdefault(passage["document_id"], set()).update(passage["access_labels"])
    return found


def test_a_defaulted_folder_is_not_served_to_a_caller_without_the_label(
        embedded: EmbeddedRun) -> None:
    run = embedded.start()
    try:
        embedded.wait_healthy(run)
        status = wait_until(
            embedded.status, 60, "three documents current and the empty labels refused",
            every_s=0.2, on_timeout=lambda: run.output[-3000:],
            accept=lambda s: s["queued"] == 0 and {d["document_id"]: d["status"]
                                                   for d in s["documents"]} == {
                "hr/pay-bands": "current", "hr/holidays": "current", "refunds": "current",
                "hr/empty": "refused"})
        empty = next(d for d in status["documents"] if d["document_id"] == "hr/empty")
        assert "'access_labels'" in empty["reason"], empty

        pay, bonus = "quokka pay bands reviewed", "quokka bonus codes secret"
        # the question finds the defaulted document for staff, and never for public
        assert search(embedded, pay, "staff").get("hr/pay-bands") == {"staff"}
        assert "hr/pay-bands" not in search(embedded, pay, "public")
        for labels in ("public", "staff"):
            assert "hr/empty" not in search(embedded, bonus, labels)
        # its own labels win over the default; elsewhere the catch-all rule
        assert search(embedded, "quokka office holidays", "public").get(
            "hr/holidays") == {"public"}
        assert search(embedded, "quokka riders get refunds within 30 days", "public").get(
            "refunds") == {"public"}
    finally:
        run.close()
