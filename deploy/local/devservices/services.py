"""How each service is fetched, configured and launched.

Each ``prepare_*`` makes the service's folder ready (idempotent, cached) and
returns the ``Launch`` that starts it. Nothing here starts a process.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import uuid
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from devservices import health
from devservices.config import ELASTICSEARCH_VERSION, KAFKA_VERSION, Config

LOCAL = Path(__file__).resolve().parents[1]


class ServiceError(Exception):
    """A service could not be prepared, started or stopped; the message says why."""


@dataclass(frozen=True)
class Launch:
    argv: list[str]
    cwd: Path
    env: dict[str, str] = field(default_factory=dict)
    user: str | None = None


@dataclass(frozen=True)
class Service:
    name: str
    marker: str  # a string found in the process's command line
    prepare: Callable[[Config], Launch]
    ready: Callable[[Config], bool]
    start_timeout: float


def _mvn(args: list[str]) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ServiceError("Maven (mvn) is not installed: run scripts/install first")
    result = subprocess.run(
        [mvn, "-q", "-B", "-f", str(LOCAL / "pom.xml"), *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-20:])
        raise ServiceError(f"mvn {' '.join(args[:1])} failed:\n{tail}")


def _state(cfg: Config, name: str) -> Path:
    path = cfg.state_dir / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def new_cluster_id() -> str:
    """A KRaft cluster id: a random UUID in URL-safe base64, as Kafka's own.

    Like Kafka's ``Uuid.randomUuid``, never one that starts with ``-``: the
    storage tool's argument parser would read ``-t -xyz`` as a missing value
    (one start in 64 failed that way).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def _base_env(java_home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TZ", "HOME")
    env = {k: v for k, v in os.environ.items() if k in keep}
    env["JAVA_HOME"] = str(java_home)
    return env


# Kafka ------------------------------------------------------------------------


def _kafka_libs(cfg: Config) -> Path:
    libs = cfg.cache_dir / f"kafka-{KAFKA_VERSION}" / "libs"
    done = libs / ".complete"
    if not done.exists():
        shutil.rmtree(libs, ignore_errors=True)
        _mvn(
            [
                "dependency:copy-dependencies",
                f"-Dkafka.version={KAFKA_VERSION}",
                "-DincludeScope=runtime",
                f"-DoutputDirectory={libs}",
            ]
        )
        done.write_text(KAFKA_VERSION)
    return libs


def prepare_kafka(cfg: Config) -> Launch:
    home = _state(cfg, "kafka")
    data = home / "data"
    props = (LOCAL / "kafka" / "server.properties").read_text().format(
        host=cfg.host,
        port=cfg.kafka_port,
        controller_port=cfg.kafka_controller_port,
        data=data,
    ) + _kafka_extra_properties(cfg)
    return kafka_launch(cfg, home, props, new_cluster_id, heap_max="768m")


def kafka_launch(
    cfg: Config, home: Path, properties: str, cluster_id: Callable[[], str], *, heap_max: str
) -> Launch:
    """Write ``home/server.properties``, format ``home/data`` once (with ``cluster_id()``),
    and return the broker's launch. The single broker and every cluster node start here."""
    libs = _kafka_libs(cfg)
    data = home / "data"
    props = home / "server.properties"
    props.write_text(properties)
    java = str(cfg.java_home / "bin" / "java")
    classpath = f"{libs}/*"
    log4j = f"-Dlog4j2.configurationFile={LOCAL / 'kafka' / 'log4j2.yaml'}"
    env = _base_env(cfg.java_home)
    if not (data / "meta.properties").exists():
        fmt = subprocess.run(
            [java, "-cp", classpath, log4j, "kafka.tools.StorageTool", "format",
             "-t", cluster_id(), "-c", str(props),
             *(arg for cred in cfg.kafka_scram_credentials for arg in ("--add-scram", cred))],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        if fmt.returncode != 0:
            raise ServiceError(f"formatting Kafka storage failed:\n{fmt.stdout}{fmt.stderr}")
    argv = [
        java, "-Xms256m", f"-Xmx{heap_max}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
        log4j, "-cp", classpath, "kafka.Kafka", str(props),
    ]  # fmt: skip
    return Launch(argv=argv, cwd=home, env=env)


def _kafka_extra_properties(cfg: Config) -> str:
    """``POLICY_INDEXER_LOCAL_KAFKA_EXTRA_PROPERTIES``' text, after the template's own."""
    if cfg.kafka_extra_properties is None:
        return ""
    try:
        extra = cfg.kafka_extra_properties.read_text()
    except OSError as exc:
        raise ServiceError(
            f"POLICY_INDEXER_LOCAL_KAFKA_EXTRA_PROPERTIES={cfg.kafka_extra_properties}: {exc}"
        ) from exc
    return f"\n# From {cfg.kafka_extra_properties}\n{extra}\n"


# Elasticsearch ------------------------------------------------------------------


def _unzip(archive: Path, target: Path) -> None:
    """Extract keeping the executable bits (zipfile alone drops them)."""
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            path = Path(zf.extract(info, target))
            mode = (info.external_attr >> 16) & 0o777
            if mode and not info.is_dir():
                path.chmod(mode)


def _elasticsearch_home(cfg: Config) -> Path:
    home = cfg.cache_dir / f"elasticsearch-{ELASTICSEARCH_VERSION}"
    done = home / ".complete"
    if not done.exists():
        shutil.rmtree(home, ignore_errors=True)
        download = cfg.cache_dir / "downloads"
        _mvn(
            [
                "dependency:copy",
                "-Dartifact=org.elasticsearch.distribution.integ-test-zip:"
                f"elasticsearch:{ELASTICSEARCH_VERSION}:zip",
                f"-DoutputDirectory={download}",
            ]
        )
        staging = cfg.cache_dir / "staging"
        shutil.rmtree(staging, ignore_errors=True)
        _unzip(download / f"elasticsearch-{ELASTICSEARCH_VERSION}.zip", staging)
        (staging / f"elasticsearch-{ELASTICSEARCH_VERSION}").rename(home)
        shutil.rmtree(staging, ignore_errors=True)
        done.write_text(ELASTICSEARCH_VERSION)
    return home


def _ensure_user(name: str) -> None:
    if subprocess.run(["id", "-u", name], capture_output=True, check=False).returncode == 0:
        return
    made = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if made.returncode != 0:
        raise ServiceError(f"cannot create the user {name} Elasticsearch runs as: {made.stderr}")


def prepare_elasticsearch(cfg: Config) -> Launch:
    home = _state(cfg, "elasticsearch")
    yml = (LOCAL / "elasticsearch" / "elasticsearch.yml").read_text().format(
        host=cfg.host,
        port=cfg.elasticsearch_port,
        transport_port=cfg.elasticsearch_transport_port,
        data=home / "data",
        logs=home / "logs",
    )
    return elasticsearch_launch(cfg, home, yml)


def elasticsearch_launch(cfg: Config, home: Path, yml: str) -> Launch:
    """Give ``home`` a config folder with ``yml`` as elasticsearch.yml and return the node's
    launch. The single node and every cluster node start here."""
    es_home = _elasticsearch_home(cfg)
    conf = home / "config"
    if conf.exists():
        shutil.rmtree(conf)
    shutil.copytree(es_home / "config", conf)
    (conf / "elasticsearch.yml").write_text(yml)
    (conf / "jvm.options.d").mkdir(exist_ok=True)
    (conf / "jvm.options.d" / "heap.options").write_text(
        f"-Xms{cfg.elasticsearch_heap}\n-Xmx{cfg.elasticsearch_heap}\n"
    )
    for sub in ("data", "logs", "tmp"):
        (home / sub).mkdir(exist_ok=True)
    if cfg.es_user:
        _ensure_user(cfg.es_user)
        for path in [home, *home.rglob("*")]:
            shutil.chown(path, cfg.es_user, cfg.es_user)
        _grant_traverse(home)
    env = _base_env(cfg.es_java_home)
    env.update(
        ES_JAVA_HOME=str(cfg.es_java_home), ES_PATH_CONF=str(conf), ES_TMPDIR=str(home / "tmp")
    )
    env.pop("JAVA_HOME")
    return Launch(
        argv=[str(es_home / "bin" / "elasticsearch")], cwd=home, env=env, user=cfg.es_user
    )


def _grant_traverse(path: Path) -> None:
    """Let the unprivileged Elasticsearch user reach its folder through root-owned parents."""
    for parent in path.parents:
        mode = parent.stat().st_mode
        if not mode & 0o001:
            parent.chmod(mode | 0o001)


# Prometheus and Alertmanager -------------------------------------------------------


def _binary(name: str, package: str) -> str:
    found = shutil.which(name) or (
        f"/usr/bin/{name}" if Path(f"/usr/bin/{name}").exists() else None
    )
    if found is None:
        raise ServiceError(
            f"{name} is not installed (Debian package {package}): run scripts/install"
        )
    return found


def prometheus_config_text(cfg: Config) -> str:
    home = cfg.state_dir / "prometheus"
    return (
        (LOCAL / "prometheus" / "prometheus.yml")
        .read_text()
        .format(
            repo=cfg.repo_root,
            targets=home / "targets",
            host=cfg.host,
            prometheus_port=cfg.prometheus_port,
            alertmanager_port=cfg.alertmanager_port,
        )
    )


def prepare_prometheus(cfg: Config) -> Launch:
    binary = _binary("prometheus", "prometheus")
    home = _state(cfg, "prometheus")
    (home / "targets").mkdir(exist_ok=True)
    config = home / "prometheus.yml"
    config.write_text(prometheus_config_text(cfg))
    argv = [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={home / 'data'}",
        "--storage.tsdb.retention.time=2d",
        f"--web.listen-address={cfg.host}:{cfg.prometheus_port}",
        "--web.enable-lifecycle",
        "--web.enable-admin-api",
    ]
    return Launch(argv=argv, cwd=home, env=_base_env(cfg.java_home))


def prepare_alertmanager(cfg: Config) -> Launch:
    binary = _binary("prometheus-alertmanager", "prometheus-alertmanager")
    home = _state(cfg, "alertmanager")
    argv = [
        binary,
        f"--config.file={LOCAL / 'alertmanager' / 'alertmanager.yml'}",
        f"--storage.path={home / 'data'}",
        f"--web.listen-address={cfg.host}:{cfg.alertmanager_port}",
        "--cluster.listen-address=",
    ]
    return Launch(argv=argv, cwd=home, env=_base_env(cfg.java_home))


SERVICES: dict[str, Service] = {
    "kafka": Service(
        "kafka", "kafka.Kafka", prepare_kafka,
        lambda c: health.kafka_ready(c.host, c.kafka_port), 120,
    ),
    "elasticsearch": Service(
        "elasticsearch", "org.elasticsearch", prepare_elasticsearch,
        lambda c: health.elasticsearch_ready(c.host, c.elasticsearch_port), 240,
    ),
    "prometheus": Service(
        "prometheus", "prometheus", prepare_prometheus,
        lambda c: health.http_ok(f"http://{c.host}:{c.prometheus_port}/-/ready"), 60,
    ),
    "alertmanager": Service(
        "alertmanager", "alertmanager", prepare_alertmanager,
        lambda c: health.http_ok(f"http://{c.host}:{c.alertmanager_port}/-/ready"), 60,
    ),
}  # fmt: skip
