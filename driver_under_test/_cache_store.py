"""The persistent {token -> model cache hash} store (D24): SQLite in the device's cache folder.

Rows are keyed by (driver version, token). Every transaction first compares the version recorded in the store
with the device's: when they differ (the driver was updated) all rows are dropped, so cache files written by
another version never prepare. Each operation opens its own short connection, so devices in several threads or
processes can share one store; SQLite's locking orders them.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
from contextlib import closing
from pathlib import Path

from driver_under_test.errors import failure

STORE_FILE = "cache-tokens.sqlite3"
_TIMEOUT_S = 10.0
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries ("
    " version TEXT NOT NULL, token BLOB NOT NULL, digest BLOB NOT NULL, PRIMARY KEY (version, token))",
)


def default_cache_dir() -> Path:
    """The per-user folder used when the device names none: under XDG_CACHE_HOME if set, else the temp folder."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "nnfuzz-dut"
    return Path(tempfile.gettempdir()) / f"nnfuzz-dut-cache-{os.getuid()}"


def _private_folder(folder: Path) -> None:
    """Create the folder (mode 0700) and refuse one that another user could have planted or can write."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(folder)
    except OSError as e:
        raise failure(f"cache folder {folder}: {e.strerror}", "cache.store") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise failure(f"cache folder {folder} is not a private folder of this user", "cache.store")


class TokenStore:
    """Token -> hash records of one driver version in one folder."""

    def __init__(self, folder: str | os.PathLike | None, version: str) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_dir()
        self.version = version

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self.folder / STORE_FILE

    def _connect(self) -> sqlite3.Connection:
        _private_folder(self.folder)
        conn = sqlite3.connect(self.path, timeout=_TIMEOUT_S, isolation_level=None)
        try:
            # A record lost to a crash only costs a cache miss, and a store damaged by one is started afresh
            # (see _run): commits need not wait for the disk, which under load takes tens of milliseconds.
            conn.execute("PRAGMA synchronous=OFF")
            for statement in _SCHEMA:
                conn.execute(statement)
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _run(self, work: str, *args: object) -> list[tuple]:
        """Run one statement in a transaction that first resets the rows if the driver version changed."""
        try:
            try:
                return self._transaction(work, args)
            except sqlite3.OperationalError:
                raise
            except sqlite3.DatabaseError:
                # Not a database (damaged or replaced): start a fresh store, losing only cache hits.
                for suffix in ("", "-wal", "-shm", "-journal"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
                return self._transaction(work, args)
        except (sqlite3.Error, OSError) as e:
            raise failure(f"cache store {self.path}: {e}", "cache.store") from None

    def _transaction(self, work: str, args: tuple) -> list[tuple]:
        with closing(self._connect()) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT value FROM meta WHERE key = 'driver_version'").fetchone()
                if row is None or row[0] != self.version:
                    conn.execute("DELETE FROM entries")
                    conn.execute(
                        "INSERT OR REPLACE INTO meta (key, value) VALUES ('driver_version', ?)", (self.version,)
                    )
                rows = conn.execute(work, args).fetchall()
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return rows

    def record(self, token: bytes, digest: bytes) -> None:
        """Remember the hash of the model cache saved under `token` (replacing an earlier one)."""
        self._run(
            "INSERT OR REPLACE INTO entries (version, token, digest) VALUES (?, ?, ?)",
            self.version,
            bytes(token),
            bytes(digest),
        )

    def forget(self, token: bytes) -> None:
        """Drop the record of `token`, if any."""
        self._run("DELETE FROM entries WHERE version = ? AND token = ?", self.version, bytes(token))

    def lookup(self, token: bytes) -> bytes | None:
        """The hash recorded for `token`, or None."""
        rows = self._run("SELECT digest FROM entries WHERE version = ? AND token = ?", self.version, bytes(token))
        return bytes(rows[0][0]) if rows else None

    def knows_digest(self, digest: bytes) -> bool:
        """True if some token of this version maps to `digest` (what a token-blind check would ask)."""
        rows = self._run("SELECT 1 FROM entries WHERE version = ? AND digest = ? LIMIT 1", self.version, bytes(digest))
        return bool(rows)
