"""Moving change events: ``EventPublisher`` (``transport.publisher``) and ``EventConsumer``
(``transport.consumer``), each on Kafka and on the embedded local queue.

The webhook receiver publishes through ``EventPublisher``; the worker consumes
through ``EventConsumer``. Everything Kafka-specific that is policy (how to
produce, how to consume, how topics are created) lives in ``transport.kafka``.
"""

from transport.publisher import (
    EventPublisher,
    PublishError,
    PublishRejected,
    PublishUnavailable,
)

__all__ = ["EventPublisher", "PublishError", "PublishRejected", "PublishUnavailable"]
