"""Triage of single artifacts: a crash named and reduced to what kills the driver; a repeat counted once; an
artifact that passes alone kept aside; each artifact journalled once."""

from __future__ import annotations

import json
from pathlib import Path

from harness.campaign import FIXED, NEW, REPRODUCING, CampaignConfig, FindingsDB, TargetSpec
from harness.campaign import events as ev
from harness.campaign.finding import read_folder
from harness.campaign.folder import RunFolder
from harness.campaign.triage import Triage
from tests.campaign.toy_campaign import SPEC, config


def _artifact(run: RunFolder, name: str, data: bytes) -> Path:
    path = run.artifacts(SPEC.name) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_a_crash_is_reduced_to_the_values_that_abort_and_repeats_count_as_hits(tmp_path: Path) -> None:
    cfg = config(tmp_path / "run", tmp_path / "f.sqlite", tmp_path / "corpus", 10.0, ["abort_on_ab"])
    run = RunFolder(cfg.out_dir)
    events: list = []
    triage = Triage(cfg, run, FindingsDB(cfg.db_path), events.append)
    try:
        # Three values, the first two 0xAB 0xCD: the fault aborts; the third value plays no part.
        triage.triage(SPEC, _artifact(run, "crash-1", b"\x03\xab\xcd\x05"))
        triage.triage(SPEC, _artifact(run, "crash-2", b"\x04\xab\xcd\x01\x02"))
        triage.triage(SPEC, _artifact(run, "crash-2", b"\x04\xab\xcd\x01\x02"))  # already journalled: nothing
        triage.triage(SPEC, _artifact(run, "crash-3", b"\x02\x01\x02"))  # passes when replayed alone
    finally:
        triage.close()
    reported = [e for e in events if isinstance(e, ev.FindingReported)]
    assert [(e.finding.outcome, e.kind) for e in reported] == [("CRASH", "new"), ("CRASH", "duplicate")]
    assert reported[0].finding is reported[1].finding
    assert [e.artifact.rsplit("/", 1)[1] for e in events if isinstance(e, ev.Unreproduced)] == ["crash-3"]
    finding = reported[0].finding
    folder = run.finding(finding.signature)
    case = json.loads((folder / "case.json").read_text())
    assert case["extras"]["values"] == [0xAB, 0xCD]
    info = json.loads((folder / "finding.json").read_text())
    assert info["minimized"] == "structural" and "case.json --target" in info["repro"]
    assert "toy.py" in (folder / "traceback.txt").read_text()  # faulthandler's stack of the abort
    journal = [e["artifact"] for e in run.triage_journal]
    assert journal == ["toy_sum/crash-1", "toy_sum/crash-2", "toy_sum/crash-3"]
    # One record: the event's finding is the folder's and the database's, the same fields with the same values.
    record = FindingsDB(cfg.db_path).fetch(finding.signature)
    assert record.status == NEW and record.hits == 2 and finding.case == case
    assert record.finding == finding == read_folder(folder, content=True)


def test_a_skipped_artifact_is_journalled_and_never_replayed(tmp_path: Path) -> None:
    cfg = config(tmp_path / "run", tmp_path / "f.sqlite", tmp_path / "corpus", 10.0, [])
    run = RunFolder(cfg.out_dir)
    triage = Triage(cfg, run, FindingsDB(cfg.db_path), lambda e: None)
    try:
        path = _artifact(run, "crash-9", b"\x03\x07\xff\xff")
        triage.skip(SPEC, path, "backlog")
        assert triage.pending() == []
    finally:
        triage.close()
    assert [(e["artifact"], e["outcome"]) for e in run.triage_journal] == [("toy_sum/crash-9", "skipped")]


def test_a_fixed_finding_found_again_keeps_the_new_input_instead_of_its_stale_one(tmp_path: Path) -> None:
    db = FindingsDB(tmp_path / "f.sqlite")
    first = config(tmp_path / "night1", db.path, tmp_path / "corpus", 10.0, ["abort_on_ab"])
    triage = Triage(first, RunFolder(first.out_dir), db, lambda e: None)
    try:
        triage.triage(SPEC, _artifact(RunFolder(first.out_dir), "crash-1", b"\x02\xab\xcd"))
    finally:
        triage.close()
    [record] = db.records()
    # Marked fixed since, with a stored case that no longer fails.
    record.status, record.fixed_run = FIXED, "night2"
    record.finding.case = {**record.finding.case, "extras": {"values": [1, 2]}}
    db.save(record)
    again = config(tmp_path / "night3", db.path, tmp_path / "corpus", 10.0, ["abort_on_ab"])
    triage = Triage(again, RunFolder(again.out_dir), db, lambda e: None)
    try:
        triage.triage(SPEC, _artifact(RunFolder(again.out_dir), "crash-2", b"\x03\xab\xcd\x09"))
    finally:
        triage.close()
    record = db.fetch(record.finding.signature)
    assert record.status == REPRODUCING and record.finding.case["extras"]["values"] == [0xAB, 0xCD]
    assert [what for run, _, _, what in db.sightings() if run == "night3"] == ["reopened"]


def test_a_finding_whose_model_executes_is_reduced_as_a_graph_to_the_operation_at_fault(tmp_path: Path) -> None:
    # A planted driver fault in ADD, in a five-operation model (tests.reduce.planted): the stored case is the ADD
    # alone, failing with the artifact's signature, and the finding records how much the graph reduction removed.
    spec = TargetSpec("tests.reduce.planted:TARGET", "planted", tmp_path / "fuzz_planted.py")
    cfg = CampaignConfig(
        targets=[spec],
        out_dir=tmp_path / "run",
        jobs=1,
        driver="driver_under_test:create_device",
        faults=["broadcast_wrong_axis"],
        corpus_root=tmp_path / "corpus",
        db_path=tmp_path / "f.sqlite",
        timeout_s=5,
        minimize_s=60.0,
        coverage=False,
    )
    run = RunFolder(cfg.out_dir)
    events: list = []
    triage = Triage(cfg, run, FindingsDB(cfg.db_path), events.append)
    try:
        path = run.artifacts(spec.name) / "crash-1"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x00")
        verdict = triage.triage(spec, path)
    finally:
        triage.close()
    [reported] = [e for e in events if isinstance(e, ev.FindingReported)]
    finding = reported.finding
    assert finding.signature == verdict.signature and finding.minimized == "structural"
    case = json.loads((run.finding(finding.signature) / "case.json").read_text())
    assert [op["type"] for op in case["model"]["operations"]] == ["ADD"]
    info = json.loads((run.finding(finding.signature) / "finding.json").read_text())
    assert (info["sizes"]["operations_before"], info["sizes"]["operations_after"]) == (5, 1)
    assert info["sizes"]["elements_after"] < info["sizes"]["elements_before"]
    assert info["sizes"]["graph_runs"] >= 1 and info["sizes"]["original"] == 1
