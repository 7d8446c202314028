"""Handing change events to the queue: ``EventPublisher`` and its Kafka implementation.

The webhook receiver publishes through ``EventPublisher``; the embedded local
queue implements the same interface, and the worker can reuse
``KafkaEventPublisher`` (e.g. for its dead-letter topic).
"""

from transport.publisher import (
    EventPublisher,
    PublishError,
    PublishRejected,
    PublishUnavailable,
)

__all__ = ["EventPublisher", "PublishError", "PublishRejected", "PublishUnavailable"]
