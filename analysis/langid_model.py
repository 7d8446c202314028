"""The language detector's model, loaded fast from an uncompressed copy.

py3langid ships its model as an LZMA-compressed npz (4.6 MB, 68 MB inflated);
inflating it costs ~1.4 s of every process that detects a language (a replay,
a worker, ``chunk``). With a cache directory set (``use_cache_dir``; the CLI
sets ``POLICY_INDEXER_LANGUAGE_MODEL_CACHE_DIR``), the first such process writes
the inflated arrays there, uncompressed, written aside and renamed into place, and
later processes read them in ~0.2 s. The file's name carries py3langid's version
and the packaged model's size and mtime, so an upgrade writes a new copy.

Any problem with the copy falls back to the package's own loader, logged: the same
model either way. A copy that cannot be read (truncated, foreign) is written again;
an unwritable directory leaves the package's loader to every process.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from array import array
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger(__name__)

_cache_dir: Path | None = None
_TYPECODES = {2: "H", 4: "I", 8: "L"}


def use_cache_dir(path: Path | None) -> None:
    """Where the uncompressed copy is kept (None: none, the package's loader each time)."""
    global _cache_dir  # noqa: PLW0603 - one process-wide choice, made at start
    _cache_dir = path


def load_identifier() -> Any:
    """py3langid's ``LanguageIdentifier`` (normalised probabilities) over its own model."""
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier  # noqa: PLC0415

    if _cache_dir is not None:
        try:
            ptc, pc, classes, nextmove, row, output = _model(_cache_dir, MODEL_DIR / MODEL_FILE)
            return LanguageIdentifier(ptc, pc, classes, nextmove, output, norm_probs=True,
                                      tk_row=row)
        except Exception as exc:  # any failure: the package's own loader
            log.warning("language model cache unusable: loading the packaged model",
                        cache_dir=str(_cache_dir), error=f"{type(exc).__name__}: {exc}"[:200])
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


def cache_file(cache_dir: Path, packaged: Path) -> Path:
    import py3langid  # noqa: PLC0415

    stat = packaged.stat()
    return cache_dir / f"py3langid-{py3langid.__version__}-{stat.st_size}-{stat.st_mtime_ns}.npz"


def _model(cache_dir: Path, packaged: Path) -> tuple[Any, ...]:
    """(ptc, pc, classes, nextmove, row, output) as ``LanguageIdentifier`` takes them."""
    import numpy as np  # noqa: PLC0415

    target = cache_file(cache_dir, packaged)
    if target.exists():
        try:
            with target.open("rb") as handle, np.load(handle, allow_pickle=False) as data:
                return (data["ptc"], data["pc"], data["classes"].tolist(),
                        _array(data["nextmove"]), _array(data["row"]), data["output"].tolist())
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            log.warning("language model cache damaged: written again", file=str(target),
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
        fd, name = tempfile.mkstemp(dir=cache_dir, prefix=".py3langid-", suffix=".npz")
        try:
            with os.fdopen(fd, "wb") as out:
                np.savez(out, **arrays)
            os.replace(name, target)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
    except OSError as exc:
        log.info("language model cache not written", cache_dir=str(cache_dir),
                    error=str(exc)[:200])
    return np.asarray(ptc), np.asarray(pc), classes, nextmove, row, output


def _numpy(values: array[int]) -> Any:
    import numpy as np  # noqa: PLC0415

    return np.frombuffer(values, dtype=f"u{values.itemsize}")


def _array(values: Any) -> array[int]:
    import numpy as np  # noqa: PLC0415

    out = array(_TYPECODES[values.dtype.itemsize])
    out.frombytes(np.ascontiguousarray(values).data.cast("B"))
    return out
