"""Where the local services listen, which versions run, and where their files go.

Every value can be changed through an environment variable (named beside it);
nothing else in the runner reads the environment.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

SERVICE_NAMES = ("kafka", "elasticsearch", "prometheus", "alertmanager")

KAFKA_VERSION = "4.4.0"
# The newest integ-test-zip on Maven Central is 8.19.x; 8.x runs on Java 17.
ELASTICSEARCH_VERSION = "8.19.21"
ES_SERVICE_USER = "policy-indexer-es"

REPO_ROOT = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Config:
    host: str
    kafka_port: int
    kafka_controller_port: int
    elasticsearch_port: int
    elasticsearch_transport_port: int
    elasticsearch_heap: str
    prometheus_port: int
    alertmanager_port: int
    cache_dir: Path
    state_dir: Path
    java_home: Path
    es_java_home: Path
    es_user: str | None  # Elasticsearch refuses to run as root: drop to this user
    repo_root: Path = REPO_ROOT
    # A broker of a test's own may need more than the PLAINTEXT listener (a SASL_SSL one):
    # properties appended to server.properties (a later key wins), SCRAM users made at format.
    kafka_extra_properties: Path | None = None
    kafka_scram_credentials: tuple[str, ...] = ()

    def port_of(self, name: str) -> int:
        return {
            "kafka": self.kafka_port,
            "elasticsearch": self.elasticsearch_port,
            "prometheus": self.prometheus_port,
            "alertmanager": self.alertmanager_port,
        }[name]


def _int(env: Mapping[str, str], key: str, default: int) -> int:
    raw = env.get(key, str(default))
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"services: {key}={raw!r} is not a port number") from None
    if not 0 < value < 65536:
        raise SystemExit(f"services: {key}={raw!r} is outside 1-65535")
    return value


def _java_major(java_home: Path) -> int | None:
    java = java_home / "bin" / "java"
    if not java.exists():
        return None
    out = subprocess.run([str(java), "-version"], capture_output=True, text=True, check=False)
    match = re.search(r'version "(\d+)', out.stderr)
    return int(match.group(1)) if match else None


def _find_java(env: Mapping[str, str], key: str, lo: int, hi: int) -> Path:
    """A JDK whose major version is in [lo, hi]: $key, $JAVA_HOME, `java` on PATH, /usr/lib/jvm."""
    candidates: list[Path] = []
    for var in (key, "JAVA_HOME"):
        if env.get(var):
            candidates.append(Path(env[var]))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(Path(os.path.realpath(on_path)).parent.parent)
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates.extend(sorted(p for p in jvm.iterdir() if p.is_dir()))
    for home in candidates:
        major = _java_major(home)
        if major is not None and lo <= major <= hi:
            return home
    raise SystemExit(
        f"services: no Java {lo}-{hi} found (tried {key}, JAVA_HOME, PATH, /usr/lib/jvm); "
        f"set {key} to a JDK of that range"
    )


def load_config(env: Mapping[str, str]) -> Config:
    root = os.geteuid() == 0
    default_cache = (
        Path("/var/cache/policy-indexer")
        if root
        else Path(env.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "policy-indexer"
    )
    default_state = (
        Path("/var/lib/policy-indexer/services") if root else REPO_ROOT / ".local" / "services"
    )
    return Config(
        host=env.get("POLICY_INDEXER_LOCAL_HOST", "127.0.0.1"),
        kafka_port=_int(env, "POLICY_INDEXER_LOCAL_KAFKA_PORT", 9092),
        kafka_controller_port=_int(env, "POLICY_INDEXER_LOCAL_KAFKA_CONTROLLER_PORT", 9095),
        elasticsearch_port=_int(env, "POLICY_INDEXER_LOCAL_ES_PORT", 9200),
        elasticsearch_transport_port=_int(env, "POLICY_INDEXER_LOCAL_ES_TRANSPORT_PORT", 9300),
        elasticsearch_heap=env.get("POLICY_INDEXER_LOCAL_ES_HEAP", "512m"),
        prometheus_port=_int(env, "POLICY_INDEXER_LOCAL_PROMETHEUS_PORT", 9090),
        alertmanager_port=_int(env, "POLICY_INDEXER_LOCAL_ALERTMANAGER_PORT", 9093),
        cache_dir=Path(env.get("POLICY_INDEXER_LOCAL_CACHE", default_cache)),
        state_dir=Path(env.get("POLICY_INDEXER_LOCAL_STATE", default_state)),
        java_home=_find_java(env, "POLICY_INDEXER_LOCAL_JAVA_HOME", 17, 99),
        # Elasticsearch 8.x needs the Java security manager, gone from Java 24 on.
        es_java_home=_find_java(env, "POLICY_INDEXER_LOCAL_ES_JAVA_HOME", 17, 23),
        es_user=ES_SERVICE_USER if root else None,
        kafka_extra_properties=(
            Path(env["POLICY_INDEXER_LOCAL_KAFKA_EXTRA_PROPERTIES"])
            if env.get("POLICY_INDEXER_LOCAL_KAFKA_EXTRA_PROPERTIES") else None
        ),
        # One `kafka-storage format --add-scram` value per line:
        # SCRAM-SHA-512=[name=indexer,password=...]
        kafka_scram_credentials=tuple(
            line.strip()
            for line in env.get("POLICY_INDEXER_LOCAL_KAFKA_SCRAM", "").splitlines()
            if line.strip()
        ),
    )
