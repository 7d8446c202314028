"""Settings to the one Kafka connection every runtime call site uses."""

from __future__ import annotations

from pathlib import Path

from policy_indexer.runtime.connections import kafka_connection
from policy_indexer.runtime.topics import expected_topics
from policy_indexer.settings import Settings
from transport.kafka import KAFKA_MAX_MESSAGE_BYTES, KafkaConnection, TopicSpec


def test_the_defaults_are_a_plaintext_connection_to_the_local_broker() -> None:
    assert kafka_connection(Settings()) == KafkaConnection("127.0.0.1:9092")


def test_sasl_ssl_settings_with_the_password_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "kafka-password"
    secret.write_text("scram-pw-from-file\n")
    settings = Settings(
        kafka_bootstrap_servers="b-1:9096,b-2:9096", kafka_security_protocol="SASL_SSL",
        kafka_sasl_mechanism="SCRAM-SHA-512", kafka_sasl_username="indexer",
        kafka_sasl_password_file=secret, kafka_ca_file=tmp_path / "ca.pem",
        kafka_ssl_check_hostname=False,
    )
    connection = kafka_connection(settings)
    assert connection.client_options() == {
        "bootstrap_servers": ["b-1:9096", "b-2:9096"], "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "indexer",
        "sasl_plain_password": "scram-pw-from-file", "ssl_check_hostname": False,
        "ssl_cafile": str(tmp_path / "ca.pem"),
    }
    assert "scram-pw-from-file" not in repr(connection)


def test_mutual_tls_settings_carry_the_key_password(tmp_path: Path) -> None:
    settings = Settings(
        kafka_security_protocol="SSL", kafka_cert_file=tmp_path / "c.pem",
        kafka_key_file=tmp_path / "k.pem", kafka_key_password="key-pw",
    )
    options = kafka_connection(settings).client_options()
    assert options["ssl_certfile"] == str(tmp_path / "c.pem")
    assert options["ssl_keyfile"] == str(tmp_path / "k.pem")
    assert options["ssl_password"] == "key-pw"


def test_the_topics_expected_follow_the_settings() -> None:
    settings = Settings(kafka_topic="changes", kafka_dead_letter_topic="changes.dlq",
                        kafka_partitions=6, kafka_replication_factor=3,
                        kafka_min_insync_replicas=2)
    assert expected_topics(settings) == (
        ["changes", "changes.dlq"], TopicSpec(6, 3, 2, KAFKA_MAX_MESSAGE_BYTES))
