"""The ``policy-indexer`` command line.

Each sub-command lives in ``policy_indexer/commands/<name>.py``, listed in
``policy_indexer.commands.COMMANDS`` and imported only when it runs, so
``policy-indexer --help`` (and every command) starts without loading the
others (``bench/bench_cli_startup.py``). This module reads the settings once
and sets up logging; a bad setting is a one-line error naming the variable.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from policy_indexer import __version__
from policy_indexer.commands import COMMANDS

# Commands that read one setting, the language model's cache place, and log nothing of
# their own: for them the group neither reads the settings nor sets up the logs
# (pydantic-settings, every section, structlog: about 0.15 s of a ``chunk`` run). The
# cache place is read from the environment (``language_model_cache_dir``); where a
# ``.env`` file or a secrets directory could set it too, the settings are read as for
# any command. The logs (the model cache's rare warnings) are set up from the settings
# before their first line. A bad or unknown POLICY_INDEXER_ variable goes unreported.
WITHOUT_SETTINGS = frozenset({"chunk"})
_CACHE_DIR_VARIABLE = "POLICY_INDEXER_LANGUAGE_MODEL_CACHE_DIR"


class SettingsError(click.ClickException):
    """Bad configuration: one line per problem, exit 2 (as a usage error), no traceback."""

    exit_code = 2


class LazyGroup(click.Group):
    """A group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, _, attribute = entry[0].partition(":")
        command: click.Command = getattr(importlib.import_module(module_name), attribute)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The list from ``COMMANDS``' help lines: nothing is imported to print it."""
        rows = [(name, help_line) for name, (_module, help_line) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="policy-indexer")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Keep a RAG index of a changing policy library correct and current."""
    # Imported here: `--help` and `--version` need neither pydantic nor structlog.
    import os  # noqa: PLC0415

    from analysis.langid_model import use_cache_dir  # noqa: PLC0415

    if ctx.invoked_subcommand in WITHOUT_SETTINGS and not _settings_files(os.environ):
        use_cache_dir(language_model_cache_dir(os.environ), before_first_log=_logs_from_settings)
        return

    from pydantic import ValidationError  # noqa: PLC0415

    from policy_indexer.logs import configure_logging  # noqa: PLC0415
    from policy_indexer.settings import Settings, unknown_settings  # noqa: PLC0415

    # Said, not refused: a variable of a newer version (or of a deployment template
    # ahead of this one) must not stop the process, but a typo must not pass unseen.
    for problem in unknown_settings(os.environ):
        click.echo(f"warning: {problem}; ignored", err=True)
    # A directory of secret files (a mounted Kubernetes Secret) is a source of the
    # settings, so it is read before them, from the environment only.
    secrets_dir = os.environ.get("POLICY_INDEXER_SECRETS_DIR") or None
    try:
        settings = Settings(_secrets_dir=secrets_dir)
    except ValidationError as exc:
        raise SettingsError(settings_error(exc)) from exc
    configure_logging(settings.log_level, settings.log_format)
    use_cache_dir(settings.language_model_cache_dir)
    ctx.obj = settings


def _settings_files(environ: Mapping[str, str]) -> bool:
    """Whether a setting may come from somewhere else than the environment."""
    return Path(".env").is_file() or bool(environ.get("POLICY_INDEXER_SECRETS_DIR"))


def language_model_cache_dir(environ: Mapping[str, str]) -> Path | None:
    """``Settings().language_model_cache_dir`` when the environment alone sets the settings.

    Read as pydantic-settings reads it: the variable's name in any case (the last one
    wins), an empty value means no cache; unset, ``$XDG_CACHE_HOME/policy-indexer`` or
    ``~/.cache/policy-indexer``. Tested against ``Settings``.
    """
    value = None
    for name, found in environ.items():
        if name.upper() == _CACHE_DIR_VARIABLE:
            value = found
    if value is None:
        return Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "policy-indexer"
    return Path(value) if value.strip() else None


def _logs_from_settings() -> None:
    """The logs as the settings say (the defaults when the settings are bad)."""
    from pydantic import ValidationError  # noqa: PLC0415

    from policy_indexer.logs import configure_logging  # noqa: PLC0415
    from policy_indexer.settings import Settings  # noqa: PLC0415

    try:
        settings = Settings()
    except ValidationError:
        configure_logging()
        return
    configure_logging(settings.log_level, settings.log_format)


def settings_error(exc: Any) -> str:
    """One line per bad setting, naming the environment variable and the value."""
    from foundation.validation import message as validation_message  # noqa: PLC0415

    lines = []
    for error in exc.errors():
        name = "_".join(str(part) for part in error["loc"]).upper()
        message = validation_message(error)
        if not name:  # a rule between settings: its message names them
            lines.append(message)
            continue
        value = error.get("input")
        secret = any(word in name for word in ("SECRET", "KEY", "AUTH", "PASSWORD", "TOKEN"))
        shown = "***" if secret else repr(value)
        lines.append(f"POLICY_INDEXER_{name}={shown}: {message}")
    return "invalid settings:\n  " + "\n  ".join(lines)
