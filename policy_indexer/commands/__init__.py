"""Sub-commands of ``policy-indexer``, one module each, listed in ``REGISTERED``."""

from __future__ import annotations

import click

from policy_indexer.commands.chunk import chunk
from policy_indexer.commands.config import config
from policy_indexer.commands.monitor import monitor
from policy_indexer.commands.reindex import reindex
from policy_indexer.commands.replay import replay
from policy_indexer.commands.run import run
from policy_indexer.commands.scheduler import scheduler
from policy_indexer.commands.status import status
from policy_indexer.commands.sweep import sweep
from policy_indexer.commands.webhook import webhook

REGISTERED: list[click.Command] = [
    config, run, webhook, replay, sweep, monitor, reindex, status, scheduler,
    chunk,
]
