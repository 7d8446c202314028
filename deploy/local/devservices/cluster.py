"""A replicated cluster on loopback: 3 Kafka brokers (KRaft, each broker and controller) and
3 Elasticsearch nodes, beside the single-node services and sharing nothing with them but
the cached jars and the Elasticsearch distribution.

Each node is a ``Service`` of its own (``kafka-1`` ... ``es-3``) run by the same ``Runner``
as the single-node services, in a state folder of its own (``<state>/../cluster`` by
default), on ports of its own. The brokers share one cluster id (written once to
``<cluster state>/kafka-cluster-id``) and a controller quorum of 3; topics made without
saying otherwise get replication factor 3 and ``min.insync.replicas=2``. The Elasticsearch
nodes form one cluster through ``discovery.seed_hosts`` on the loopback transport ports.

Environment (defaults in brackets):

    POLICY_INDEXER_LOCAL_CLUSTER_STATE                 [<state folder>/../cluster]
    POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_PORT            [19092: brokers on 19092-19094]
    POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_CONTROLLER_PORT [19192: controllers on 19192-19194]
    POLICY_INDEXER_LOCAL_CLUSTER_ES_PORT               [19201: HTTP on 19201-19203]
    POLICY_INDEXER_LOCAL_CLUSTER_ES_TRANSPORT_PORT     [19301: transport on 19301-19303]
    POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_HEAP            [512m per broker]
    POLICY_INDEXER_LOCAL_ES_HEAP                       [512m per node, as the single node]
    POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_ADVERTISED_PORTS [none: each broker its own port]

``..._ADVERTISED_PORTS`` (``BROKER=PORT[,BROKER=PORT]``, e.g. ``3=40123``) makes a broker
still listen on its own port but advertise ``PORT``, where something else (a test's TCP
proxy) forwards to it: clients, and the other brokers' replica fetchers, which follow the
advertised address, then reach it only through that port; the controller quorum does not
(it uses ``controller.quorum.voters``). Read when a broker starts: restart the broker to
apply or undo it.
"""

from __future__ import annotations

import dataclasses
import json
import time
import urllib.error
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from devservices import health
from devservices.config import Config, _int
from devservices.runner import Runner, ServiceError
from devservices.services import (
    LOCAL,
    Launch,
    Service,
    elasticsearch_launch,
    kafka_launch,
    new_cluster_id,
)

NODES = 3
KAFKA_MARKER = "kafka.Kafka"
ES_MARKER = "org.elasticsearch"


@dataclass(frozen=True)
class ClusterLayout:
    """Where each node listens: node ``i`` (1-based) on ``first + i - 1`` of each kind."""

    host: str
    kafka_port: int
    kafka_controller_port: int
    es_port: int
    es_transport_port: int
    kafka_heap: str
    nodes: int = NODES
    # (broker, port): the broker advertises that port instead of its own (see above)
    kafka_advertised: tuple[tuple[int, int], ...] = ()

    def advertised(self, i: int) -> int:
        """The port broker ``i`` advertises (its own unless ``kafka_advertised`` says so)."""
        return dict(self.kafka_advertised).get(i, self.kafka(i))

    def kafka(self, i: int) -> int:
        return self.kafka_port + i - 1

    def controller(self, i: int) -> int:
        return self.kafka_controller_port + i - 1

    def es(self, i: int) -> int:
        return self.es_port + i - 1

    def transport(self, i: int) -> int:
        return self.es_transport_port + i - 1

    @property
    def indices(self) -> range:
        return range(1, self.nodes + 1)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{self.host}:{self.kafka(i)}" for i in self.indices)

    @property
    def es_urls(self) -> list[str]:
        return [f"http://{self.host}:{self.es(i)}" for i in self.indices]

    def port_of(self, name: str) -> int:
        kind, _, number = name.partition("-")
        i = int(number)
        return self.kafka(i) if kind == "kafka" else self.es(i)

    def all_ports(self) -> dict[str, int]:
        """Every port a node listens on, by a name for messages."""
        ports: dict[str, int] = {}
        for i in self.indices:
            ports[f"kafka-{i} broker"] = self.kafka(i)
            ports[f"kafka-{i} controller"] = self.controller(i)
            ports[f"es-{i} http"] = self.es(i)
            ports[f"es-{i} transport"] = self.transport(i)
        return ports


def load_cluster(env: Mapping[str, str], base: Config) -> tuple[Config, ClusterLayout]:
    """The cluster's config (``base`` with the cluster's state folder) and its ports."""
    state = Path(env.get("POLICY_INDEXER_LOCAL_CLUSTER_STATE", base.state_dir.parent / "cluster"))
    layout = ClusterLayout(
        host=base.host,
        kafka_port=_int(env, "POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_PORT", 19092),
        kafka_controller_port=_int(env, "POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_CONTROLLER_PORT",
                                   19192),
        es_port=_int(env, "POLICY_INDEXER_LOCAL_CLUSTER_ES_PORT", 19201),
        es_transport_port=_int(env, "POLICY_INDEXER_LOCAL_CLUSTER_ES_TRANSPORT_PORT", 19301),
        kafka_heap=env.get("POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_HEAP", "512m"),
        kafka_advertised=_advertised_ports(env),
    )
    # The single broker's extra listeners and SCRAM users are not the cluster's.
    cfg = dataclasses.replace(base, state_dir=state, kafka_extra_properties=None,
                              kafka_scram_credentials=())
    return cfg, layout


def _advertised_ports(env: Mapping[str, str]) -> tuple[tuple[int, int], ...]:
    key = "POLICY_INDEXER_LOCAL_CLUSTER_KAFKA_ADVERTISED_PORTS"
    pairs: list[tuple[int, int]] = []
    for item in filter(None, (part.strip() for part in env.get(key, "").split(","))):
        broker, sep, port = item.partition("=")
        if not sep or not broker.strip().isdigit() or not 1 <= int(broker) <= NODES:
            raise SystemExit(f"services: {key}={env[key]!r}: want BROKER=PORT, "
                             f"BROKER in 1-{NODES}")
        pairs.append((int(broker), _int({key: port.strip()}, key, 0)))
    return tuple(pairs)


def _cluster_id(cfg: Config) -> str:
    """The one KRaft cluster id every broker is formatted with (made on first use)."""
    path = cfg.state_dir / "kafka-cluster-id"
    if not path.exists():
        cfg.state_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(new_cluster_id() + "\n")
    return path.read_text().strip()


def _prepare_kafka(layout: ClusterLayout, i: int, cfg: Config) -> Launch:
    home = cfg.state_dir / f"kafka-{i}"
    home.mkdir(parents=True, exist_ok=True)
    voters = ",".join(f"{n}@{layout.host}:{layout.controller(n)}" for n in layout.indices)
    props = (LOCAL / "kafka" / "cluster.properties").read_text().format(
        node_id=i, voters=voters, host=layout.host, port=layout.kafka(i),
        advertised_port=layout.advertised(i), controller_port=layout.controller(i),
        data=home / "data",
    )
    cluster_id = _cluster_id(cfg)  # a node never formatted gets the cluster's id
    return kafka_launch(cfg, home, props, lambda: cluster_id, heap_max=layout.kafka_heap)


def _prepare_es(layout: ClusterLayout, i: int, cfg: Config) -> Launch:
    home = cfg.state_dir / f"es-{i}"
    home.mkdir(parents=True, exist_ok=True)
    seeds = ", ".join(f'"{layout.host}:{layout.transport(n)}"' for n in layout.indices)
    masters = ", ".join(f'"es-{n}"' for n in layout.indices)
    yml = (LOCAL / "elasticsearch" / "cluster.yml").read_text().format(
        node=f"es-{i}", host=layout.host, port=layout.es(i), transport_port=layout.transport(i),
        seeds=seeds, masters=masters, data=home / "data", logs=home / "logs",
    )
    return elasticsearch_launch(cfg, home, yml)


def cluster_services(layout: ClusterLayout) -> dict[str, Service]:
    services: dict[str, Service] = {}
    for i in layout.indices:
        services[f"kafka-{i}"] = Service(
            f"kafka-{i}", KAFKA_MARKER, partial(_prepare_kafka, layout, i),
            partial(lambda c, port: health.kafka_ready(c.host, port), port=layout.kafka(i)), 180,
        )  # fmt: skip
    for i in layout.indices:
        services[f"es-{i}"] = Service(
            f"es-{i}", ES_MARKER, partial(_prepare_es, layout, i),
            partial(lambda c, port: health.elasticsearch_ready(c.host, port), port=layout.es(i)),
            300,
        )  # fmt: skip
    return services


class Cluster:
    """``up``, ``down`` and ``status`` of the cluster's six nodes, or of some of them."""

    def __init__(self, cfg: Config, layout: ClusterLayout) -> None:
        self.cfg = cfg
        self.layout = layout
        self.services = cluster_services(layout)
        self.runner = Runner(cfg, self.services, layout.port_of)

    def up(self, names: list[str] | None = None, *, timeout_s: float = 300) -> None:
        """Start the nodes together (a quorum is healthy only with a majority up), wait
        until each is healthy, then until the cluster has all of its members."""
        names = names or list(self.services)
        self.runner.up(names, together=True)
        self.wait_formed(timeout_s)

    def wait_formed(self, timeout_s: float = 300) -> None:
        """Until every running broker lists 3 brokers and Elasticsearch counts 3 nodes."""
        deadline = time.monotonic() + timeout_s
        while True:
            problems = self.problems()
            if not problems:
                return
            if time.monotonic() > deadline:
                raise ServiceError("the cluster did not form: " + "; ".join(problems))
            time.sleep(1)

    def problems(self) -> list[str]:
        problems = []
        brokers = [health.kafka_brokers(self.layout.host, self.layout.kafka(i))
                   for i in self.layout.indices]
        if max(brokers) < self.layout.nodes:
            problems.append(f"Kafka brokers seen by each broker: {brokers}")
        try:
            body = health.http_json(f"{self.layout.es_urls[0]}/_cluster/health")
        except (OSError, urllib.error.URLError, ValueError) as exc:
            problems.append(f"Elasticsearch es-1: {exc}")
        else:
            nodes = body.get("number_of_nodes") if isinstance(body, dict) else None
            if nodes != self.layout.nodes:
                problems.append(f"Elasticsearch nodes: {nodes}")
        return problems

    def down(self, names: list[str] | None = None) -> None:
        """Stop the nodes all at once (a broker stopped last would wait on a lost quorum),
        then check that none of the cluster's ports still listens."""
        names = names or list(self.services)
        with self.runner._locked(), ThreadPoolExecutor(len(names)) as pool:
            list(pool.map(lambda n: self.runner._down_one(self.services[n]), names))
        if set(names) == set(self.services):
            held = {what: port for what, port in self.layout.all_ports().items()
                    if health.port_open(self.layout.host, port)}
            if held:
                raise ServiceError(f"still listening after down: {held}")
            print(f"cluster: every port free ({len(self.layout.all_ports())} checked)")

    def status(self) -> int:
        worst = self.runner.status()
        if worst == 0:
            problems = self.problems()
            print("cluster: " + ("formed" if not problems else "; ".join(problems)))
            worst = 1 if problems else 0
        print(f"kafka bootstrap: {self.layout.bootstrap}")
        print(f"elasticsearch: {','.join(self.layout.es_urls)}")
        return worst

    def describe(self) -> str:
        return json.dumps({"kafka_bootstrap": self.layout.bootstrap,
                           "elasticsearch_urls": self.layout.es_urls,
                           "state": str(self.cfg.state_dir)})
