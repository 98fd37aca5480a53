"""The findings database: every signature ever found, across campaigns, in one embedded SQLite file.

A finding is first `new` (found by the campaign that first saw it), then `reproducing` (a later campaign saw it
again or replayed it and it still fails) or `fixed` (a later campaign replayed it and it passed); a fixed finding
found again is `reproducing` once more, with a `reopened` sighting. Each record keeps the finding whole (its
minimized input too, so it can be replayed after its run folder is gone) with that bookkeeping next to it.

The interface is small on purpose (fetch, save, records; the same for runs; a log of sightings): everything else
is built on it. Each call opens its own connection, so the campaign's threads can share one database.

The schema's version is SQLite's user_version. Version 1 (user_version 0: the first layout, one column per field
of the finding) is migrated in place when opened; a database of a newer version is refused (FindingsDBError).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from harness.campaign.finding import Finding

NEW, REPRODUCING, FIXED = "new", "reproducing", "fixed"
STATUSES = (NEW, REPRODUCING, FIXED)

SCHEMA_VERSION = 2
_TABLES = (
    """CREATE TABLE IF NOT EXISTS findings (
    signature TEXT PRIMARY KEY,
    finding TEXT NOT NULL,
    status TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    first_run TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    last_run TEXT NOT NULL,
    fixed_run TEXT,
    hits INTEGER NOT NULL DEFAULT 0
)""",
    """CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    folder TEXT NOT NULL,
    started TEXT NOT NULL,
    ended TEXT,
    driver TEXT NOT NULL,
    faults TEXT NOT NULL DEFAULT '[]',
    targets TEXT NOT NULL DEFAULT '[]',
    budget_s REAL NOT NULL DEFAULT 0
)""",
    """CREATE TABLE IF NOT EXISTS sightings (
    run TEXT NOT NULL,
    signature TEXT NOT NULL,
    time TEXT NOT NULL,
    what TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS sightings_by_run ON sightings (run)",
)


class FindingsDBError(RuntimeError):
    """The database cannot be used by this nnfuzz (a newer schema): say which file and what to do."""


def now() -> str:
    """The current time as an ISO 8601 UTC string (seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class FindingRecord:
    """A finding as the database keeps it: the finding, and its status and sightings across campaigns."""

    finding: Finding
    status: str
    first_seen: str
    first_run: str
    last_seen: str
    last_run: str
    fixed_run: str | None = None
    hits: int = 0

    def to_json(self, content: bool = False) -> dict:
        """The finding's JSON (with its input, case and traceback when asked) and the bookkeeping, in one dict."""
        return {**self.finding.to_json(content), **{k: getattr(self, k) for k in _BOOKKEEPING}}


@dataclass
class RunRecord:
    """One campaign's entry."""

    id: str
    folder: str
    started: str
    driver: str
    ended: str | None = None
    faults: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    budget_s: float = 0.0


_BOOKKEEPING = "status first_seen first_run last_seen last_run fixed_run hits".split()
_FINDING_COLUMNS = ["signature", "finding", *_BOOKKEEPING]
_SAVE_FINDING = (
    f"INSERT OR REPLACE INTO findings ({', '.join(_FINDING_COLUMNS)}) VALUES ({', '.join('?' * len(_FINDING_COLUMNS))})"
)
_RUN_COLUMNS = "id folder started ended driver faults targets budget_s".split()


class FindingsDB:
    """The findings database at `path` (created on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            # One process at a time creates or migrates the schema; the others then find it done.
            db.execute("BEGIN IMMEDIATE")
            try:
                _prepare_schema(db, self.path)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        finally:
            db.close()

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30.0)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a committed finding survives a kill of the campaign
            with db:  # one transaction: committed on success, rolled back on error
                yield db
        finally:
            db.close()

    # -- findings ---------------------------------------------------------------------------------------------------

    def fetch(self, signature: str) -> FindingRecord | None:
        """The record of a signature, or None."""
        with self._connect() as db:
            row = db.execute(
                f"SELECT {', '.join(_FINDING_COLUMNS)} FROM findings WHERE signature = ?", (signature,)
            ).fetchone()
        return _finding(row) if row else None

    def save(self, record: FindingRecord) -> None:
        """Insert or replace a record."""
        with self._connect() as db:
            db.execute(_SAVE_FINDING, _finding_row(record))

    def records(self, status: str | None = None) -> list[FindingRecord]:
        """Every record (of one status, when given), most recently seen first."""
        query = f"SELECT {', '.join(_FINDING_COLUMNS)} FROM findings"
        args: tuple = ()
        if status is not None:
            query, args = query + " WHERE status = ?", (status,)
        with self._connect() as db:
            rows = db.execute(query + " ORDER BY last_seen DESC, signature", args).fetchall()
        return [_finding(r) for r in rows]

    # -- runs -------------------------------------------------------------------------------------------------------

    def save_run(self, run: RunRecord) -> None:
        """Insert or replace a run."""
        values = (
            run.id,
            run.folder,
            run.started,
            run.ended,
            run.driver,
            json.dumps(run.faults),
            json.dumps(run.targets),
            run.budget_s,
        )
        with self._connect() as db:
            db.execute(f"INSERT OR REPLACE INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({', '.join('?' * 8)})", values)

    def runs(self) -> list[RunRecord]:
        """Every run, oldest first."""
        with self._connect() as db:
            rows = db.execute(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs ORDER BY started, id").fetchall()
        return [RunRecord(r[0], r[1], r[2], r[4], r[3], json.loads(r[5]), json.loads(r[6]), float(r[7])) for r in rows]

    # -- sightings --------------------------------------------------------------------------------------------------

    def log(self, run: str, signature: str, what: str) -> None:
        """Record that a run saw a signature: found, duplicate, reproducing, fixed or reopened."""
        with self._connect() as db:
            row = (run, signature, now(), what)
            db.execute("INSERT INTO sightings (run, signature, time, what) VALUES (?, ?, ?, ?)", row)

    def sightings(self, run: str | None = None) -> list[tuple[str, str, str, str]]:
        """(run, signature, time, what), oldest first; of one run when given."""
        query, args = "SELECT run, signature, time, what FROM sightings", ()
        if run is not None:
            query, args = query + " WHERE run = ?", (run,)
        with self._connect() as db:
            return [tuple(r) for r in db.execute(query + " ORDER BY rowid", args).fetchall()]


def _finding_row(r: FindingRecord) -> tuple:
    finding = json.dumps(r.finding.to_json(content=True), sort_keys=True)
    return (r.finding.signature, finding, *(getattr(r, k) for k in _BOOKKEEPING))


def _finding(row: tuple) -> FindingRecord:
    _, finding, *bookkeeping = row
    return FindingRecord(Finding.from_json(json.loads(finding)), **dict(zip(_BOOKKEEPING, bookkeeping)))


def _prepare_schema(db: sqlite3.Connection, path: Path) -> None:
    """Create the tables, or bring those of an older version up to this one (inside the caller's transaction)."""
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise FindingsDBError(
            f"{path} is a findings database of schema {version}, written by a newer nnfuzz (this one reads up to "
            f"{SCHEMA_VERSION}): use that version, or another --db"
        )
    columns = {row[1] for row in db.execute("PRAGMA table_info(findings)")}
    legacy = version < SCHEMA_VERSION and "target_ref" in columns
    if legacy:
        db.execute("ALTER TABLE findings RENAME TO findings_v1")
    for statement in _TABLES:
        db.execute(statement)
    if legacy:
        rows = db.execute(f"SELECT {', '.join(_V1_COLUMNS)} FROM findings_v1").fetchall()
        db.executemany(_SAVE_FINDING, [_finding_row(_from_v1(row)) for row in rows])
        db.execute("DROP TABLE findings_v1")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


# Schema 1: one column per field of what was then FindingRecord.
_V1_COLUMNS = (
    "signature target target_ref outcome rule title frames driver faults status first_seen first_run last_seen "
    "last_run fixed_run hits input case_json traceback minimized folder"
).split()


def _from_v1(row: tuple) -> FindingRecord:
    """The record a schema-1 row holds, its finding placed in the folder the row names."""
    d = dict(zip(_V1_COLUMNS, row))
    finding = Finding(
        signature=d["signature"],
        target=d["target"],
        target_ref=d["target_ref"],
        outcome=d["outcome"],
        rule=d["rule"],
        title=d["title"],
        frames=json.loads(d["frames"]),
        driver=d["driver"],
        faults=json.loads(d["faults"]),
        minimized=d["minimized"] or "none",
        input=bytes(d["input"]) if d["input"] is not None else None,
        case=json.loads(d["case_json"]) if d["case_json"] else None,
        traceback=d["traceback"],
    )
    if d["folder"]:
        # A finding folder is runs/<run>/findings/<signature>: the run that stored it is two levels up.
        folder = Path(d["folder"])
        finding = finding.placed(folder, folder.parent.parent.name)
    return FindingRecord(finding, **{k: d[k] for k in _BOOKKEEPING})
