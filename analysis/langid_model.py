"""The language detector's model, mapped from an uncompressed copy.

py3langid ships its model as an LZMA-compressed npz (4.6 MB, 68 MB inflated);
inflating it costs ~1.4 s of every process that detects a language (a replay,
a worker, ``chunk``). With a cache directory set (``use_cache_dir``; the CLI
sets ``POLICY_INDEXER_LANGUAGE_MODEL_CACHE_DIR``), the first such process writes
the inflated arrays there, uncompressed (one ``.npy`` record after another),
written aside and renamed into place, and later processes map them into memory
(~0.01 s; reading them from an npz took ~0.1-0.2 s): the pages a detection touches
are read from the page cache, which every process on the machine shares. The
file's name carries py3langid's version and the packaged model's size and mtime,
so an upgrade writes a new copy.

Any problem with the copy falls back to the package's own loader, logged: the same
model either way. A copy that cannot be read (truncated, foreign) is written again;
an unwritable directory leaves the package's loader to every process.
"""

from __future__ import annotations

import os
import tempfile
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

_cache_dir: Path | None = None
# Called once before this module's first log line (see ``use_cache_dir``).
_before_first_log: Callable[[], None] | None = None
# The arrays of the copy, in the order they are written and read.
_ARRAYS = ("ptc", "pc", "classes", "nextmove", "row", "output")


def use_cache_dir(path: Path | None, before_first_log: Callable[[], None] | None = None) -> None:
    """Where the uncompressed copy is kept (None: none, the package's loader each time).

    ``before_first_log``, when given, is called once before this module logs anything:
    a process that sets up its logs only if something logs (``policy-indexer chunk``)
    passes its set-up. structlog itself is imported only to log (~0.05 s of a start).
    """
    global _cache_dir, _before_first_log  # noqa: PLW0603 - one process-wide choice, made at start
    _cache_dir = path
    _before_first_log = before_first_log


def _log() -> Any:
    """This module's logger, the process's logs set up first if they are set up late."""
    global _before_first_log
    setup, _before_first_log = _before_first_log, None
    if setup is not None:
        setup()
    import structlog  # noqa: PLC0415 - only a process that logs here pays for it

    return structlog.get_logger(__name__)


def load_identifier() -> Any:
    """py3langid's ``LanguageIdentifier`` (normalised probabilities) over its own model."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier  # noqa: PLC0415

    if _cache_dir is not None:
        try:
            ptc, pc, classes, nextmove, row, output = _model(_cache_dir, MODEL_DIR / MODEL_FILE)
            return LanguageIdentifier(ptc, pc, classes, nextmove, output, norm_probs=True,
                                      tk_row=row)
        except Exception as exc:  # any failure: the package's own loader
            _log().warning("language model cache unusable: loading the packaged model",
                        cache_dir=str(_cache_dir), error=f"{type(exc).__name__}: {exc}"[:200])
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def cache_file(cache_dir: Path, packaged: Path) -> Path:
    import py3langid  # noqa: PLC0415

    stat = packaged.stat()
    return cache_dir / f"py3langid-{py3langid.__version__}-{stat.st_size}-{stat.st_mtime_ns}.npy"


def _model(cache_dir: Path, packaged: Path) -> tuple[Any, ...]:
    """(ptc, pc, classes, nextmove, row, output) as ``LanguageIdentifier`` takes them."""
    import numpy as np  # noqa: PLC0415

    target = cache_file(cache_dir, packaged)
    if target.exists():
        try:
            data = _mapped(target)
            # nextmove and row are indexed a byte at a time by py3langid's tokenizer:
            # memoryviews of the mapping (an ``array`` would be a private 39 MB copy).
            return (data["ptc"], data["pc"], data["classes"].tolist(),
                    memoryview(data["nextmove"]), memoryview(data["row"]),
                    data["output"].tolist())
        except (OSError, ValueError) as exc:
            _log().warning("language model cache damaged: written again", file=str(target),
                        error=f"{type(exc).__name__}: {exc}"[:200])
            target.unlink(missing_ok=True)
    from py3langid.modelio import load_model  # noqa: PLC0415

    ptc, pc, classes, nextmove, row, output = load_model(packaged)
    arrays = {
        "ptc": np.asarray(ptc), "pc": np.asarray(pc), "classes": np.array(classes),
        "nextmove": _numpy(nextmove), "row": _numpy(row),
        "output": np.asarray(output, dtype=np.int64),
    }
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=cache_dir, prefix=".py3langid-", suffix=".npy")
        try:
            with os.fdopen(fd, "wb") as out:
                for key in _ARRAYS:
                    np.lib.format.write_array(out, arrays[key], allow_pickle=False)
            os.replace(name, target)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
        _remove_older_copies(cache_dir, target)
    except OSError as exc:
        _log().info("language model cache not written", cache_dir=str(cache_dir),
                    error=str(exc)[:200])
    return np.asarray(ptc), np.asarray(pc), classes, nextmove, row, output


def _remove_older_copies(cache_dir: Path, kept: Path) -> None:
    """Copies no process of this installation reads again: the same py3langid version's
    copies of an earlier install (the name holds the packaged file's mtime) and the old
    ``.npz`` format, ~68 MB each. Another version's copy stays (two versions may share a
    cache place during a rolling deploy). A mapped copy stays valid once unlinked."""
    stale = [*cache_dir.glob("py3langid-*.npz"),
             *(p for p in cache_dir.glob(f"{kept.name.rsplit('-', 1)[0]}-*.npy") if p != kept)]
    for path in stale:
        try:
            path.unlink()
        except OSError as exc:
            _log().info("old language model copy not removed", file=str(path), error=str(exc)[:200])


def _numpy(values: array[int]) -> Any:
    import numpy as np  # noqa: PLC0415

    return np.frombuffer(values, dtype=f"u{values.itemsize}")


def _mapped(path: Path) -> dict[str, Any]:
    """The arrays of the copy, each a read-only ``numpy.memmap``; ``ValueError`` for a file
    that is not a whole copy (foreign, truncated, longer)."""
    import numpy as np  # noqa: PLC0415

    arrays: dict[str, Any] = {}
    with path.open("rb") as handle:
        for key in _ARRAYS:
            shape, fortran, dtype = _header(handle)
            if dtype.hasobject:
                raise ValueError(f"{key}: an array of Python objects")
            offset = handle.tell()
            arrays[key] = np.memmap(handle, dtype=dtype, mode="r", offset=offset, shape=shape,
                                    order="F" if fortran else "C")
            handle.seek(offset + arrays[key].nbytes)
        if handle.tell() != os.fstat(handle.fileno()).st_size:
            raise ValueError("not the size of the arrays it holds")
    return arrays


def _header(handle: IO[bytes]) -> tuple[tuple[int, ...], bool, Any]:
    from numpy.lib import format as npy  # noqa: PLC0415

    version = npy.read_magic(handle)
    if version == (1, 0):
        return npy.read_array_header_1_0(handle)
    if version == (2, 0):
        return npy.read_array_header_2_0(handle)
    raise ValueError(f"npy version {version} not written by this module")
