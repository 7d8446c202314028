"""The embedded mode never loads the Kafka or Elasticsearch client.

Both cost start-up time (about 0.2 s together, measured with
``PYTHONPROFILEIMPORTTIME=1 policy-indexer replay ... --to embedded``) and the
embedded mode never uses them. A fresh interpreter imports what an embedded
``replay``, ``run`` and ``status`` import, then opens the embedded backends, and
says which client modules got loaded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
from policy_indexer.commands import replay, run, status
from policy_indexer.runtime.backends import open_backends
from policy_indexer.settings import Settings

backends = open_backends(Settings(pipeline="embedded", embedded_dir=sys.argv[1]))
backends.close()
loaded = sorted(m for m in ("kafka", "elasticsearch", "elastic_transport") if m in sys.modules)
print(",".join(loaded))
"""


def test_embedded_commands_do_not_load_the_kafka_or_elasticsearch_client(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "data")],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"embedded mode loaded: {result.stdout.strip()}"
