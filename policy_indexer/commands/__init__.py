"""Sub-commands of ``policy-indexer``, one module each, listed in ``REGISTERED``."""

from __future__ import annotations

import click

from policy_indexer.commands.config import config
from policy_indexer.commands.run import run

REGISTERED: list[click.Command] = [config, run]
