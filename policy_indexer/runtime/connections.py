"""Settings to connections: the one place a process's Kafka connection is made from.

Every runtime call site that makes a Kafka client (the worker's consumer and
dead-letter producer, the webhook's publisher, ``replay --to kafka``,
``dead-letters``, ``status``, ``topics``, ``doctor``) asks ``kafka_connection``,
so a security setting reaches all of them or none.
"""

from __future__ import annotations

from policy_indexer.settings import Settings
from transport.kafka_connection import KafkaConnection


def kafka_connection(settings: Settings) -> KafkaConnection:
    """The brokers, protocol, SASL credentials and TLS files of ``settings``.

    Everything set is passed on; what the protocol does not use is left out of
    the clients' options and named by ``KafkaConnection.unused()``.
    """
    password = settings.kafka_sasl_password
    key_password = settings.kafka_key_password
    return KafkaConnection(
        bootstrap_servers=settings.kafka_bootstrap_servers,
        security_protocol=settings.kafka_security_protocol,
        sasl_mechanism=settings.kafka_sasl_mechanism,
        sasl_username=settings.kafka_sasl_username,
        sasl_password=password.get_secret_value() if password else None,
        ca_file=settings.kafka_ca_file,
        cert_file=settings.kafka_cert_file,
        key_file=settings.kafka_key_file,
        key_password=key_password.get_secret_value() if key_password else None,
        check_hostname=settings.kafka_ssl_check_hostname,
    )
