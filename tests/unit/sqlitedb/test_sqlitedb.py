"""The one way a SQLite file is opened and written: WAL, and all of a write or none of it."""

from __future__ import annotations

from pathlib import Path

import pytest

import sqlitedb


def test_a_file_is_opened_in_wal_mode_in_a_folder_made_for_it(tmp_path: Path) -> None:
    conn = sqlitedb.connect(tmp_path / "deep" / "x.sqlite3")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    finally:
        conn.close()


def test_a_failed_write_leaves_nothing_and_a_good_one_everything(tmp_path: Path) -> None:
    conn = sqlitedb.connect(tmp_path / "x.sqlite3")
    try:
        conn.execute("CREATE TABLE t (n INTEGER)")

        def crash_between_two_statements() -> None:
            with sqlitedb.immediate(conn):
                conn.execute("INSERT INTO t VALUES (1)")
                raise RuntimeError("crash")

        with pytest.raises(RuntimeError):
            crash_between_two_statements()
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0
        with sqlitedb.immediate(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            conn.execute("INSERT INTO t VALUES (2)")
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 2
    finally:
        conn.close()


def test_a_file_that_is_not_a_database_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite3"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(Exception, match="not a database"):
        sqlitedb.connect(path)
