"""Commands that used to work in one mode only, now in both: every command works in both
modes."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest
from support.waiting import wait_until
from support.webhook_helpers import SECRET, encode, payload, signed_headers
from support.workers import CLI, free_port

from transport.local_queue import LocalQueue

pytestmark = pytest.mark.slow  # starts `policy-indexer webhook` (a process)


def test_the_webhook_command_publishes_into_the_embedded_queue(tmp_path: Path) -> None:
    """``policy-indexer webhook`` in the embedded mode: into the local queue, not Kafka."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("POLICY_INDEXER_")}
    env.update({"POLICY_INDEXER_EMBEDDED_DIR": str(tmp_path / "data"),
                "POLICY_INDEXER_WEBHOOK_PORT": str(port), "POLICY_INDEXER_LOG_LEVEL": "WARNING",
                "POLICY_INDEXER_WEBHOOK_SECRETS": json.dumps([SECRET.decode()])})
    proc = subprocess.Popen([CLI, "webhook"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: httpx.get(f"{url}/healthz", timeout=2).status_code, 60,
                   "the webhook to answer /healthz", accept=lambda code: code == 200,
                   retry_on=(httpx.TransportError,))
        body = encode(payload())
        sent = httpx.post(f"{url}/webhooks/cms", content=body,
                          headers=signed_headers(body, at=time.time()), timeout=30)
        assert sent.status_code == 202, sent.text
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    queue = LocalQueue(tmp_path / "data" / "queue.sqlite3")
    try:
        assert queue.pending("policy.document-changes") == 1
    finally:
        queue.close()
