"""KafkaConnection: the kafka-python options every client gets, masking, and clear refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from transport.kafka import KafkaConnection, ProducerPolicy, TopicSpec, as_connection

SECRET = "pw-never-printed-7731"
KEY_SECRET = "key-pw-never-printed-0042"


def sasl_ssl(**overrides: object) -> KafkaConnection:
    values: dict[str, object] = {
        "bootstrap_servers": "b-1.example:9096, b-2.example:9096",
        "security_protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "indexer", "sasl_password": SECRET, "ca_file": Path("/etc/kafka/ca.pem"),
    }
    values.update(overrides)
    return KafkaConnection(**values)  # type: ignore[arg-type]


def test_sasl_ssl_maps_to_the_kafka_python_options() -> None:
    assert sasl_ssl().client_options() == {
        "bootstrap_servers": ["b-1.example:9096", "b-2.example:9096"],
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "indexer",
        "sasl_plain_password": SECRET,
        "ssl_check_hostname": True,
        "ssl_cafile": "/etc/kafka/ca.pem",
    }


def test_mutual_tls_passes_the_client_certificate_key_and_its_password() -> None:
    connection = KafkaConnection(
        "kafka:9093", "SSL", ca_file=Path("/ca.pem"), cert_file=Path("/tls.crt"),
        key_file=Path("/tls.key"), key_password=KEY_SECRET, check_hostname=False,
    )
    assert connection.client_options() == {
        "bootstrap_servers": ["kafka:9093"], "security_protocol": "SSL",
        "ssl_check_hostname": False, "ssl_cafile": "/ca.pem", "ssl_certfile": "/tls.crt",
        "ssl_keyfile": "/tls.key", "ssl_password": KEY_SECRET,
    }
    assert "sasl_mechanism" not in connection.client_options()


def test_a_plain_string_is_a_plaintext_connection_with_nothing_else() -> None:
    connection = as_connection("127.0.0.1:9092")
    assert connection == KafkaConnection("127.0.0.1:9092")
    assert connection.client_options() == {"bootstrap_servers": ["127.0.0.1:9092"],
                                           "security_protocol": "PLAINTEXT"}
    assert as_connection(connection) is connection


def test_settings_the_protocol_does_not_use_are_left_out_and_named() -> None:
    connection = KafkaConnection("k:9092", "PLAINTEXT", sasl_username="indexer",
                                 ca_file=Path("/ca.pem"))
    assert "ssl_cafile" not in connection.client_options()
    assert "sasl_plain_username" not in connection.client_options()
    assert connection.unused() == ["kafka_sasl_username", "kafka_ca_file"]
    assert sasl_ssl().unused() == []


def test_the_producer_policy_carries_the_connection() -> None:
    options = ProducerPolicy().options(sasl_ssl())
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_plain_password"] == SECRET
    assert options["acks"] == "all"
    assert options["enable_idempotence"] is True


def test_repr_and_str_never_show_the_passwords() -> None:
    connection = sasl_ssl(cert_file=Path("/c"), key_file=Path("/k"), key_password=KEY_SECRET)
    for text in (repr(connection), str(connection), f"{connection}", connection.describe()):
        assert SECRET not in text
        assert KEY_SECRET not in text
    assert "sasl_password='**********'" in repr(connection)
    assert "sasl_username='indexer'" in repr(connection)
    assert connection.describe() == ("b-1.example:9096, b-2.example:9096 "
                                     "(SASL_SSL, SCRAM-SHA-512 as indexer)")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"security_protocol": "SASL_TLS"}, "security_protocol='SASL_TLS' is not one of"),
        ({"sasl_mechanism": None}, "sasl_mechanism=None is not one of PLAIN"),
        ({"sasl_mechanism": "GSSAPI"}, "sasl_mechanism='GSSAPI' is not one of"),
        ({"sasl_password": None}, "SASL_SSL needs sasl_username and sasl_password"),
        ({"sasl_username": ""}, "SASL_SSL needs sasl_username and sasl_password"),
        ({"cert_file": Path("/c")}, "cert_file and key_file go together"),
        ({"bootstrap_servers": " , "}, "bootstrap_servers=' , ' names no broker"),
    ],
)
def test_a_connection_that_cannot_work_is_refused_naming_the_field(
    overrides: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as caught:
        sasl_ssl(**overrides)
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"partitions": 0}, "partitions must be at least 1, got 0"),
        ({"replication_factor": 0}, "replication_factor must be at least 1, got 0"),
        ({"replication_factor": 2, "min_insync_replicas": 3},
         "min_insync_replicas 3 is above replication_factor 2"),
    ],
)
def test_a_topic_spec_that_cannot_work_is_refused(spec: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TopicSpec(**spec)


def test_topic_configs_carry_min_insync_replicas_and_the_message_size() -> None:
    assert TopicSpec(3, 3, 2, 11_534_336).topic_configs() == {
        "max.message.bytes": "11534336", "min.insync.replicas": "2"}
