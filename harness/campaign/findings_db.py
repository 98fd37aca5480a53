"""The findings database: every signature ever found, across campaigns, in one embedded SQLite file.

A finding is first `new` (found by the campaign that first saw it), then `reproducing` (a later campaign saw it
again or replayed it and it still fails) or `fixed` (a later campaign replayed it and it passed); a fixed finding
found again is `reproducing` once more, with a `reopened` sighting. Each record keeps the minimized input, so a
finding can be replayed after its run folder is gone.

The interface is small on purpose (fetch, save, records; the same for runs; a log of sightings): everything else
is built on it. Each call opens its own connection, so the campaign's threads can share one database.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

NEW, REPRODUCING, FIXED = "new", "reproducing", "fixed"
STATUSES = (NEW, REPRODUCING, FIXED)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS findings (
    signature TEXT PRIMARY KEY,
    target TEXT NOT NULL,
    target_ref TEXT NOT NULL,
    outcome TEXT NOT NULL,
    rule TEXT,
    title TEXT NOT NULL DEFAULT '',
    frames TEXT NOT NULL DEFAULT '[]',
    driver TEXT NOT NULL,
    faults TEXT NOT NULL DEFAULT '[]',
    status TEXT NOT NULL,
    first_seen TEXT NOT NULL,
    first_run TEXT NOT NULL,
    last_seen TEXT NOT NULL,
    last_run TEXT NOT NULL,
    fixed_run TEXT,
    hits INTEGER NOT NULL DEFAULT 0,
    input BLOB,
    case_json TEXT,
    traceback TEXT NOT NULL DEFAULT '',
    minimized TEXT NOT NULL DEFAULT '',
    folder TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    folder TEXT NOT NULL,
    started TEXT NOT NULL,
    ended TEXT,
    driver TEXT NOT NULL,
    faults TEXT NOT NULL DEFAULT '[]',
    targets TEXT NOT NULL DEFAULT '[]',
    budget_s REAL NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS sightings (
    run TEXT NOT NULL,
    signature TEXT NOT NULL,
    time TEXT NOT NULL,
    what TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS sightings_by_run ON sightings (run);
"""


def now() -> str:
    """The current time as an ISO 8601 UTC string (seconds)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class FindingRecord:
    """One signature's entry."""

    signature: str
    target: str
    target_ref: str
    outcome: str
    rule: str | None
    title: str
    driver: str
    status: str
    first_seen: str
    first_run: str
    last_seen: str
    last_run: str
    frames: list[str] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    fixed_run: str | None = None
    hits: int = 0
    input: bytes | None = None  # the (minimized) raw fuzzer input, when there is one
    case: dict | None = None  # the (minimized) case JSON
    traceback: str = ""
    minimized: str = ""  # how: "structural", "libfuzzer", "none"
    folder: str = ""  # the finding folder it was stored in

    def to_json(self, with_input: bool = False) -> dict:
        """A JSON-ready dict (the input as hex only when asked)."""
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("input", "case")}
        if with_input:
            d["input_hex"] = self.input.hex() if self.input is not None else None
            d["case"] = self.case
        return d


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


_FINDING_COLUMNS = (
    "signature target target_ref outcome rule title frames driver faults status first_seen first_run last_seen "
    "last_run fixed_run hits input case_json traceback minimized folder"
).split()
_RUN_COLUMNS = "id folder started ended driver faults targets budget_s".split()


class FindingsDB:
    """The findings database at `path` (created on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.executescript(_SCHEMA)

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
        values = _finding_row(record)
        with self._connect() as db:
            db.execute(
                f"INSERT OR REPLACE INTO findings ({', '.join(_FINDING_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_FINDING_COLUMNS))})",
                values,
            )

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
    return (
        r.signature,
        r.target,
        r.target_ref,
        r.outcome,
        r.rule,
        r.title,
        json.dumps(r.frames),
        r.driver,
        json.dumps(list(r.faults)),
        r.status,
        r.first_seen,
        r.first_run,
        r.last_seen,
        r.last_run,
        r.fixed_run,
        r.hits,
        r.input,
        json.dumps(r.case, sort_keys=True) if r.case is not None else None,
        r.traceback,
        r.minimized,
        r.folder,
    )


def _finding(row: tuple) -> FindingRecord:
    d = dict(zip(_FINDING_COLUMNS, row))
    case_json = d.pop("case_json")
    d["frames"] = json.loads(d["frames"])
    d["faults"] = json.loads(d["faults"])
    d["case"] = json.loads(case_json) if case_json else None
    d["input"] = bytes(d["input"]) if d["input"] is not None else None
    return FindingRecord(**d)
