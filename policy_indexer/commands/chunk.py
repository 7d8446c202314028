"""``policy-indexer chunk FILE|-``: print a document's chunks, one JSON object per line.

For people debugging how a document is chunked, and for scripts. The content
type comes from ``--content-type`` or the file name (``.html``/``.htm`` are
HTML, anything else Markdown). ``--check`` also verifies the chunker's
guarantees on the result and fails, naming each problem, if one is broken.
"""

from __future__ import annotations

import atexit
import gc
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import click
from pydantic_core import SchemaSerializer

_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """numpy imported inside loads OpenBLAS with one thread, not a pool.

    The pool's threads start and spin when numpy is imported: ~0.04 s of CPU, and
    more of the wall time on a busy machine (a 5 MB document at load 3.5, 12
    alternating runs: median 0.93 s with the pool, 0.79 s without). This command's
    numpy does no BLAS work worth a thread (the token counter none, the language
    detector one small product, its answers bit-identical on every version of both
    corpora). Only when numpy is not loaded yet and the variable is unset; the
    variable is put back after, so child processes and later imports never see it.
    """
    if "numpy" in sys.modules or _BLAS_THREADS in os.environ:
        yield
        return
    os.environ[_BLAS_THREADS] = "1"
    try:
        yield
    finally:
        os.environ.pop(_BLAS_THREADS, None)


with _one_blas_thread():
    from chunker import Chunk, ChunkerError, SizePolicy, chunk_document

_NOT_IN_ID = re.compile(r"[@#\x00-\x1f\x7f]")
_LINES_A_WRITE = 256


@click.command()
@click.argument("file", type=click.File("rb"))
@click.option(
    "--document-id", help="Document id in chunk ids [default: the file name without extension]."
)
@click.option(
    "--version",
    "version_number",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Document version in chunk ids.",
)
@click.option(
    "--content-type",
    type=click.Choice(["text/markdown", "text/html"]),
    help="[default: from the file name, else text/markdown]",
)
@click.option(
    "--min-tokens",
    type=click.IntRange(min=0),
    default=SizePolicy().min_tokens,
    show_default=True,
    help="Size policy: merge sections smaller than this.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(min=1),
    default=SizePolicy().max_tokens,
    show_default=True,
    help="Size policy: split sections bigger than this.",
)
@click.option(
    "--check", is_flag=True, help="Also verify lossless/bounded/consistent; exit 1 if not."
)
def chunk(  # noqa: PLR0917 - click passes options as arguments
    file: BinaryIO,
    document_id: str | None,
    version_number: int,
    content_type: str | None,
    min_tokens: int,
    max_tokens: int,
    check: bool,
) -> None:
    """Chunk FILE (or - for standard input) and print one JSON object per chunk."""
    name = getattr(file, "name", "-")
    path = Path(name) if name not in {"-", "<stdin>"} else None
    if document_id is None:
        document_id = _NOT_IN_ID.sub("_", path.stem) if path is not None else "stdin"
    if content_type is None:
        is_html = path is not None and path.suffix.lower() in {".html", ".htm"}
        content_type = "text/html" if is_html else "text/markdown"
    content = file.read()
    # At exit, the interpreter's last garbage collections walk every object left (numpy's,
    # pydantic's, every module's): ~0.04 s of a run that this command's process has no
    # use for. Frozen first, they are not walked (still freed as the modules go). Run at
    # exit only, so a process that runs the command in place (tests) keeps its collector.
    atexit.unregister(gc.freeze)  # once, however often the command runs
    atexit.register(gc.freeze)
    try:
        policy = SizePolicy(min_tokens=min_tokens, max_tokens=max_tokens)
    except ChunkerError as exc:
        raise click.ClickException(f"{name}: {exc}") from exc
    # No collection while the document is chunked and printed: its objects go by their
    # reference counts (a 5 MB document leaves 66 objects in cycles), and the collector's
    # passes meanwhile walk the heap, every module's objects included (~0.07 s of the
    # ~0.7 s of a 5 MB document, 10 runs each).
    collecting = gc.isenabled()
    gc.disable()
    try:
        chunks = _print_chunks(name, document_id, version_number, content, content_type, policy)
    finally:
        if collecting:
            gc.enable()
    if check:
        from chunker.invariants import problems  # noqa: PLC0415 - only to check

        found = problems(content.decode("utf-8-sig"), chunks, policy)
        for problem in found:
            click.echo(f"{name}: {problem}", err=True)
        if found:
            sys.exit(1)


def _print_chunks(  # noqa: PLR0917 - the command's values, passed on
    name: str, document_id: str, version: int, content: bytes, content_type: str,
    policy: SizePolicy,
) -> list[Chunk]:
    """Chunk ``content`` and print the chunks' JSON lines; the chunks."""
    try:
        chunks = chunk_document(
            document_id, version, content, content_type=content_type, policy=policy
        )
    except ChunkerError as exc:
        raise click.ClickException(f"{name}: {exc}") from exc
    # A few hundred lines a write: a write and a flush a chunk cost ~30 ms of 5 MB's 4,300.
    # Each line is the bytes of ``model_dump_json()`` (its serializer, its defaults),
    # written as they are: decoding them to print them (click.echo encodes them again,
    # and looks for ANSI codes to strip: JSON escapes ESC, so there are none) cost ~0.1 s
    # of those 5 MB.
    serializer: SchemaSerializer = Chunk.__pydantic_serializer__
    to_json = serializer.to_json
    out = sys.stdout.buffer
    for start in range(0, len(chunks), _LINES_A_WRITE):
        out.write(b"\n".join([to_json(c) for c in chunks[start:start + _LINES_A_WRITE]]))
        out.write(b"\n")
    out.flush()
    return chunks
