"""The findings database: records and runs persist across connections; statuses and sightings filter."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from harness.campaign.finding import Finding
from harness.campaign.findings_db import (
    FIXED,
    NEW,
    REPRODUCING,
    SCHEMA_VERSION,
    FindingRecord,
    FindingsDB,
    FindingsDBError,
    RunRecord,
)


def record(signature: str, status: str, last_seen: str, fixed_run: str | None = None, **kw) -> FindingRecord:
    finding = Finding(
        signature=signature,
        target="validation",
        target_ref="validation",
        outcome="CRASH",
        rule="driver.process_survives",
        title="the worker process died (SIGABRT)",
        **kw,
    )
    return FindingRecord(finding, status, "2030-01-01T00:00:00Z", "r1", last_seen, "r1", fixed_run)


def test_a_saved_finding_comes_back_whole_from_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "findings.sqlite"
    saved = record(
        "a1",
        NEW,
        "2030-01-02T00:00:00Z",
        frames=["driver_under_test/x.py:f"],
        faults=["abort_on_unknown_operand_type"],
        input=b"\x00\xff",
        case={"target": "validation", "model": {"operands": []}},
        traceback="Traceback ...",
        minimized="structural",
    )
    saved.hits = 3
    FindingsDB(path).save(saved)
    assert FindingsDB(path).fetch("a1") == saved
    assert FindingsDB(path).fetch("nope") is None


def test_records_filter_by_status_most_recently_seen_first(tmp_path: Path) -> None:
    db = FindingsDB(tmp_path / "f.sqlite")
    db.save(record("old", REPRODUCING, "2030-01-01T00:00:00Z"))
    db.save(record("new", NEW, "2030-01-03T00:00:00Z"))
    db.save(record("gone", FIXED, "2030-01-02T00:00:00Z", fixed_run="r2"))
    assert [r.finding.signature for r in db.records()] == ["new", "gone", "old"]
    assert [r.finding.signature for r in db.records(FIXED)] == ["gone"]
    db.save(record("old", FIXED, "2030-01-01T00:00:00Z"))  # saving again replaces
    assert sorted(r.finding.signature for r in db.records(FIXED)) == ["gone", "old"]


def test_runs_and_sightings_are_kept_in_order(tmp_path: Path) -> None:
    db = FindingsDB(tmp_path / "f.sqlite")
    db.save_run(RunRecord("r2", "runs/r2", "2030-01-02T00:00:00Z", "d:f", faults=["x"], targets=["validation"]))
    db.save_run(RunRecord("r1", "runs/r1", "2030-01-01T00:00:00Z", "d:f", ended="2030-01-01T01:00:00Z"))
    assert [(r.id, r.ended, r.faults) for r in db.runs()] == [("r1", "2030-01-01T01:00:00Z", []), ("r2", None, ["x"])]
    db.log("r1", "a1", "found")
    db.log("r2", "a1", "fixed")
    assert [(run, sig, what) for run, sig, _, what in db.sightings()] == [("r1", "a1", "found"), ("r2", "a1", "fixed")]
    assert [what for *_, what in db.sightings("r2")] == ["fixed"]


# The first layout (schema 1, user_version 0): one column per field, as the campaigns before schema 2 wrote it.
V1_COLUMNS = (
    "signature, target, target_ref, outcome, rule, title, frames, driver, faults, status, first_seen, first_run, "
    "last_seen, last_run, fixed_run, hits INTEGER, input BLOB, case_json, traceback, minimized, folder"
)
V1_RUNS = "id, folder, started, ended, driver, faults, targets, budget_s REAL"


def test_a_database_of_the_first_layout_is_migrated_keeping_every_finding_and_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "old.sqlite"
    case = {"target": "validation", "model": {}}
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE findings ({V1_COLUMNS})")
        db.execute(f"CREATE TABLE runs ({V1_RUNS})")
        db.execute(
            f"INSERT INTO findings VALUES ({', '.join('?' * 21)})",
            ("a1", "validation", "validation", "FAILURE", "status.invalid_model_rejected", "accepted", '["d.py:f"]')
            + ("m:f", '["x"]', FIXED, "2030-01-01T00:00:00Z", "r1", "2030-01-03T00:00:00Z", "r3", "r3", 4)
            + (b"\x01\x02", json.dumps(case), "Traceback ...", "structural", "runs/r2/findings/a1"),
        )
        db.execute("INSERT INTO runs VALUES ('r1', 'runs/r1', '2030', NULL, 'm:f', '[]', '[]', 0)")
    db = FindingsDB(path)
    [record] = db.records()
    bookkeeping = (record.status, record.first_run, record.last_run, record.fixed_run, record.hits)
    assert bookkeeping == (FIXED, "r1", "r3", "r3", 4)
    f = record.finding
    assert (f.signature, f.target, f.outcome, f.frames) == ("a1", "validation", "FAILURE", ["d.py:f"])
    assert (f.driver, f.faults) == ("m:f", ["x"])
    assert (f.input, f.case, f.traceback, f.minimized) == (b"\x01\x02", case, "Traceback ...", "structural")
    # The finding gets what schema 1 did not keep: the run of its folder and its repro commands.
    assert (f.folder, f.run) == ("runs/r2/findings/a1", "r2")
    assert f.repro == "nnfuzz repro runs/r2/findings/a1/case.json --target validation --driver m:f --faults x"
    assert [r.id for r in db.runs()] == ["r1"]
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert FindingsDB(path).fetch("a1") == record  # opened again: nothing left to migrate


def test_a_database_of_a_newer_schema_is_refused_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(FindingsDBError, match="newer nnfuzz"):
        FindingsDB(path)
