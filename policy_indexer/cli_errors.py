"""The one place a command's failure becomes its one line and its exit status.

A command states what failing means for it, once, with ``@says_errors("search
failed")``; this module decides how each error of the project's tree is said:

- a usage error (exit 2, click's ``Usage:`` lines): a request that does not
  validate (``ValidationError``, in ``foundation.validation.one_line``), an
  unknown run id, an unknown dead letter;
- a failure of what the command needs (exit 1, or the command's
  ``exit_code``): the index (``StoreError``), the local queue (``QueueError``),
  the reindex lease (``LeaseError``), the dead letters (``DeadLetterError``),
  said as ``<failed>: <the error>``; a command adds classes of its own with
  ``also=`` (``search`` says a ``ValueError`` this way);
- a setting or an input to fix (exit 1): not configured (search, source,
  webhook), a change log that does not parse, Kafka unreachable, a part that
  could not start, a ``ValueError``: said as they are, since their message
  names what to set.

Anything else is not caught: a bug keeps its traceback. Classes are looked up
in ``sys.modules`` only, by name: an error of a module the command never
imported cannot have been raised, and a command loads nothing more for it
(``policy-indexer chunk`` starts as fast as before).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

USAGE = (("pydantic", "ValidationError"), ("retrieval.citations", "UnknownRun"),
         ("policy_indexer.runtime.dead_letters", "DeadLetterNotFound"))
FAILED = (("store.errors", "StoreError"), ("transport.local_queue", "QueueError"),
          ("reindex.errors", "LeaseError"), ("policy_indexer.runtime.dead_letters",
                                             "DeadLetterError"))
AS_THEY_ARE = (("policy_indexer.runtime.parts", "PartError"),
               ("policy_indexer.runtime.embedded", "RunError"),
               ("policy_indexer.runtime.monitor", "MonitorCycleFailed"),
               ("policy_indexer.runtime.status", "StatusUnavailable"),
               ("policy_indexer.runtime.replay", "ReplayStopped"),
               ("transport.kafka_connection", "KafkaConnectError"),
               ("transport.publisher", "PublishError"),
               ("builtins", "ValueError"))  # the *NotConfigured errors and ChangeLogError are ones


class CommandFailed(click.ClickException):
    """``Error: <one line>`` on stderr and the command's exit status."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click reads it per instance


def _loaded(names: tuple[tuple[str, str], ...]) -> Iterator[type[BaseException]]:
    for module_name, attribute in names:
        module = sys.modules.get(module_name)
        if module is not None:
            yield getattr(module, attribute)


def _is(exc: BaseException, names: tuple[tuple[str, str], ...]) -> bool:
    return isinstance(exc, tuple(_loaded(names)))


def one_line(exc: Exception, failed: str | None, *, exit_code: int = 1,
             also: tuple[type[BaseException], ...] = ()) -> click.ClickException | None:
    """How ``exc`` is said by a command whose failure is ``failed``; None: not ours to say."""
    if isinstance(exc, click.ClickException):
        return None
    if _is(exc, USAGE):
        text = str(exc)
        if _is(exc, (("pydantic", "ValidationError"),)):
            from foundation.validation import one_line as validation_line  # noqa: PLC0415

            text = validation_line(exc)  # type: ignore[arg-type]
        return click.UsageError(text)
    if failed is not None and (isinstance(exc, also) or _is(exc, FAILED)):
        return CommandFailed(f"{failed}: {exc}", exit_code)
    if _is(exc, AS_THEY_ARE):
        return CommandFailed(str(exc), exit_code)
    return None


def says_errors(failed: str | None = None, *, exit_code: int = 1,
                also: tuple[type[BaseException], ...] = ()) -> Callable[[F], F]:
    """Decorate a command: the project's errors it raises leave as one line (see above).

    ``failed``: what the command says when what it needs fails (``search failed``,
    ``cannot open the index``); None: such errors are not caught. ``exit_code``: the
    status of a failure (``check-citations`` exits 3: not checked).
    """
    def decorate(command: F) -> F:
        @functools.wraps(command)
        def said(*args: Any, **kwargs: Any) -> Any:
            try:
                return command(*args, **kwargs)
            except Exception as exc:
                line = one_line(exc, failed, exit_code=exit_code, also=also)
                if line is None:
                    raise
                raise line from exc
        return said  # type: ignore[return-value]
    return decorate
