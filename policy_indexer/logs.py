"""Structured logging: one JSON object per line on stderr (or readable console lines).

Library code logs through ``structlog.get_logger(__name__)`` with key-value
pairs; this module is called once by the command line to decide the output.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog


def configure_logging(
    level: str = "INFO", fmt: Literal["json", "console"] = "json"
) -> None:
    """Route structlog and the standard library through one renderer."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[structlog.types.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    structlog.configure(
        # filter_by_level first: a switched-off level costs one comparison, not the chain.
        processors=[
            structlog.stdlib.filter_by_level,
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # Not cached: a module's logger then follows the configuration in force when it
        # logs (a second configure, structlog.testing.capture_logs), not the one of its
        # first call; the cost is a dict lookup a log line, at a few lines an event.
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,
            renderer,
        ],
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # kafka-python is chatty at INFO about every connection.
    logging.getLogger("kafka").setLevel(max(logging.WARNING, root.level))
    logging.getLogger("elastic_transport").setLevel(max(logging.WARNING, root.level))
