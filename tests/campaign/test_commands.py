"""`nnfuzz campaign` and `nnfuzz findings`: a short campaign of a real target, the findings listing, and misuse."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from harness.campaign import NEW, Finding, FindingRecord, FindingsDB
from harness.cli.campaign_command import main_campaign
from harness.cli.findings_command import main_findings
from harness.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_campaign_of_the_validation_target_shows_progress_and_writes_its_report(tmp_path: Path, capsys) -> None:
    corpus = tmp_path / "corpus"
    shutil.copytree(ROOT / "corpus" / "validation", corpus / "validation")
    seeds = sorted(p.name for p in (corpus / "validation").iterdir())
    run = tmp_path / "run"
    args = ["--targets", "validation", "--budget-seconds", "4", "--jobs", "1", "--out", str(run)]
    args += [
        "--corpus",
        str(corpus),
        "--work-corpus",
        str(tmp_path / "work"),
        "--db",
        str(tmp_path / "f.sqlite"),
        "--minimize-seconds",
        "2",
        "--fail-on",
        "never",
    ]
    code = main_campaign(args)
    err = capsys.readouterr().err
    assert code == 0, err
    assert "[   0/4s] validation" in err and f"report: {run / 'report.html'}" in err  # progress, then the report
    report = json.loads((run / "report.json").read_text())
    assert report["run"]["targets"] == ["validation"] and report["targets"]["validation"]["execs"] > 0
    coverage = report["coverage"]
    assert coverage["ok"] and 0 < coverage["branches_covered"] < coverage["branches_total"]
    assert (run / "report.html").read_text().count("<svg") == 3
    assert sorted(p.name for p in (corpus / "validation").iterdir()) == seeds  # the seeds are never written
    found = report["targets"]["validation"]["corpus"]["found"]
    assert len(list((tmp_path / "work" / "validation").iterdir())) == found == report["totals"]["corpus_found"]
    assert report["run"]["work_corpus"] == str(tmp_path / "work")


def test_the_working_corpus_is_shared_by_default_and_the_run_folders_own_with_faults(tmp_path, monkeypatch) -> None:
    from harness.cli.campaign_command import build_parser, make_config

    monkeypatch.setenv("NNFUZZ_WORK_CORPUS", str(tmp_path / "shared"))

    def config(*args: str):
        return make_config(build_parser().parse_args(["--targets", "validation", *args]), [])

    assert config("--out", str(tmp_path / "a")).work_corpus == tmp_path / "shared"
    assert config("--out", str(tmp_path / "b"), "--faults", "scalar_dims_unchecked").work_corpus is None
    assert config("--out", str(tmp_path / "c"), "--fresh-corpus").work_corpus is None
    named = config("--out", str(tmp_path / "d"), "--faults", "scalar_dims_unchecked", "--work-corpus", "w")
    assert named.work_corpus == Path("w").resolve()
    assert named.working_corpus("validation") == Path("w").resolve() / "validation"
    assert config("--out", str(tmp_path / "e"), "--fresh-corpus").working_corpus("validation") == (
        tmp_path / "e" / "targets" / "validation" / "corpus"
    )


def test_misuse_is_exit_code_2_with_a_reason(tmp_path: Path, capsys) -> None:
    assert main_campaign(["--targets", "no_such_target"]) == 2
    assert "no fuzz script for target(s) no_such_target" in capsys.readouterr().err
    (tmp_path / "campaign.json").write_text("{}")
    assert main_campaign(["--targets", "validation", "--out", str(tmp_path)]) == 2
    assert f"resume it with --resume {tmp_path}" in capsys.readouterr().err
    assert main_campaign(["--resume", str(tmp_path / "nothing")]) == 2
    assert "holds no campaign" in capsys.readouterr().err
    assert main_findings(["--db", str(tmp_path / "none.sqlite")]) == 2
    assert main_campaign(["--targets", "validation", "--fresh-corpus", "--work-corpus", str(tmp_path)]) == 2
    assert "not allowed with argument" in capsys.readouterr().err
    run = tmp_path / "run"
    args = ["--targets", "validation", "--faults", "no_such_fault", "--out", str(run), "--db", str(tmp_path / "f.db")]
    assert main_campaign(args) == 2
    assert "no_such_fault" in capsys.readouterr().err and not run.exists()  # nothing written


def test_the_findings_command_lists_shows_and_exports_the_database(tmp_path: Path, capsys) -> None:
    db_path = tmp_path / "f.sqlite"
    finding = Finding(
        signature="0123456789abcdef",
        target="validation",
        target_ref="validation",
        outcome="FAILURE",
        rule="status.invalid_model_rejected",
        title="getSupportedOperations answered NONE for an invalid model",
        driver="driver_under_test:create_device",
        case={"target": "validation", "model": {}},
        folder="runs/20300101-000000/findings/0123456789abcdef",
    )
    stamp, run = "2030-01-01T00:00:00Z", "20300101-000000"
    FindingsDB(db_path).save(FindingRecord(finding, NEW, stamp, run, stamp, run))
    assert main(["findings", "--db", str(db_path)]) == 0
    out = capsys.readouterr().out
    assert "0123456789abcdef  new" in out and "runs/20300101-000000/findings/0123456789abcdef" in out
    assert "1 finding(s): 1 new, 0 reproducing, 0 fixed" in out
    assert main_findings(["--db", str(db_path), "--show", "0123"]) == 0
    assert '"target": "validation"' in capsys.readouterr().out
    assert main_findings(["--db", str(db_path), "--status", "fixed", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
