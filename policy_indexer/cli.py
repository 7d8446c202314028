"""The ``policy-indexer`` command line.

Each sub-command lives in ``policy_indexer/commands/<name>.py`` and is added
to the group below; this module only reads settings and sets up logging.
"""

from __future__ import annotations

import click

from policy_indexer import __version__
from policy_indexer.commands import REGISTERED
from policy_indexer.logs import configure_logging
from policy_indexer.settings import Settings


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="policy-indexer")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Keep a RAG index of a changing policy library correct and current."""
    settings = Settings()
    configure_logging(settings.log_level, settings.log_format)
    ctx.obj = settings


for _command in REGISTERED:
    main.add_command(_command)
