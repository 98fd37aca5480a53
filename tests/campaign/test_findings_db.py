"""The findings database: records and runs persist across connections; statuses and sightings filter."""

from __future__ import annotations

from pathlib import Path

from harness.campaign.findings_db import FIXED, NEW, REPRODUCING, FindingRecord, FindingsDB, RunRecord


def record(signature: str, status: str, last_seen: str, **kw) -> FindingRecord:
    defaults = dict(
        target="validation",
        target_ref="validation",
        outcome="CRASH",
        rule="driver.process_survives",
        title="the worker process died (SIGABRT)",
        driver="driver_under_test:create_device",
        first_seen="2030-01-01T00:00:00Z",
        first_run="r1",
        last_run="r1",
    )
    defaults.update(kw)
    return FindingRecord(signature=signature, status=status, last_seen=last_seen, **defaults)


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
        hits=3,
    )
    FindingsDB(path).save(saved)
    assert FindingsDB(path).fetch("a1") == saved
    assert FindingsDB(path).fetch("nope") is None


def test_records_filter_by_status_most_recently_seen_first(tmp_path: Path) -> None:
    db = FindingsDB(tmp_path / "f.sqlite")
    db.save(record("old", REPRODUCING, "2030-01-01T00:00:00Z"))
    db.save(record("new", NEW, "2030-01-03T00:00:00Z"))
    db.save(record("gone", FIXED, "2030-01-02T00:00:00Z", fixed_run="r2"))
    assert [r.signature for r in db.records()] == ["new", "gone", "old"]
    assert [r.signature for r in db.records(FIXED)] == ["gone"]
    db.save(record("old", FIXED, "2030-01-01T00:00:00Z"))  # saving again replaces
    assert sorted(r.signature for r in db.records(FIXED)) == ["gone", "old"]


def test_runs_and_sightings_are_kept_in_order(tmp_path: Path) -> None:
    db = FindingsDB(tmp_path / "f.sqlite")
    db.save_run(RunRecord("r2", "runs/r2", "2030-01-02T00:00:00Z", "d:f", faults=["x"], targets=["validation"]))
    db.save_run(RunRecord("r1", "runs/r1", "2030-01-01T00:00:00Z", "d:f", ended="2030-01-01T01:00:00Z"))
    assert [(r.id, r.ended, r.faults) for r in db.runs()] == [("r1", "2030-01-01T01:00:00Z", []), ("r2", None, ["x"])]
    db.log("r1", "a1", "found")
    db.log("r2", "a1", "fixed")
    assert [(run, sig, what) for run, sig, _, what in db.sightings()] == [("r1", "a1", "found"), ("r2", "a1", "fixed")]
    assert [what for *_, what in db.sightings("r2")] == ["fixed"]
