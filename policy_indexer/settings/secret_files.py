"""Secrets read from files, and credentials masked inside URLs.

The rule every secret file follows is in the package docstring
(``policy_indexer.settings``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# Secrets that can also come from a file named by ``<setting>_file``.
SECRET_FILE_SETTINGS = (
    "kafka_sasl_password", "kafka_key_password", "elasticsearch_password",
    "elasticsearch_api_key", "search_api_keys",
)
# A secret file is some bytes; a bigger one is the wrong file (a whole bundle).
MAX_SECRET_FILE_BYTES = 64 * 1024


def read_secret_file(path: Path, setting: str) -> str:
    """The secret in ``path``, without the trailing newline editors and ``echo`` add."""
    try:
        if path.stat().st_size > MAX_SECRET_FILE_BYTES:
            raise ValueError(f"{setting} {str(path)!r} is larger than {MAX_SECRET_FILE_BYTES} "
                             "bytes: not a secret file")
        value = path.read_text(encoding="utf-8").rstrip("\r\n")
    except OSError as exc:
        raise ValueError(f"{setting} {str(path)!r} cannot be read: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise ValueError(f"{setting} {str(path)!r} is not UTF-8 text") from exc
    if not value:
        raise ValueError(f"{setting} {str(path)!r} is empty")
    return value


def with_secret_files(data: Any) -> Any:
    """``data`` with each ``X_FILE`` setting's secret read into X (a mounted secret)."""
    if not isinstance(data, dict):
        return data
    data = dict(data)
    for name in SECRET_FILE_SETTINGS:
        path = data.get(f"{name}_file")
        if not path:
            continue
        if data.get(name):
            raise ValueError(f"set {name} or {name}_file, not both")
        data[name] = read_secret_file(Path(path), f"{name}_file")
    return data


def mask_url(url: str) -> str:
    """``url`` with any user and password inside it replaced by ``***``."""
    parsed = urlsplit(url)
    if parsed.username is None and parsed.password is None:
        return url
    host = parsed.hostname or ""
    if parsed.port is not None:
        host = f"{host}:{parsed.port}"
    return parsed._replace(netloc=f"***@{host}").geturl()
