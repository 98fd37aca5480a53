"""`nnfuzz export FINDING`: a finding folder, a case JSON or a signature in the findings database becomes a
reproducer folder; bad input is misuse (exit 2) with a message that says what to change."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from harness.campaign import Finding, FindingRecord, FindingsDB
from harness.campaign.finding import folder_files
from harness.cli.main import main
from tests.engines.planted import add_case

PLANTED = "tests.engines.planted:wrong_operation_device"


def _finding_folder(root: Path, driver: str = PLANTED) -> Path:
    finding = Finding(
        signature="0123abcd4567ef89",
        target="execution",
        target_ref="execution",
        outcome="FAILURE",
        rule="accuracy.float32",
        title="sync: output 0 differs from the reference",
        driver=driver,
        case=add_case().to_json(),
    )
    folder = root / "findings" / finding.signature
    folder.mkdir(parents=True)
    for name, data in folder_files(finding, b"").items():
        (folder / name).write_bytes(data)
    return folder


def test_a_finding_folder_is_exported_next_to_it_on_the_findings_driver(tmp_path: Path, capsys) -> None:
    folder = _finding_folder(tmp_path)
    code = main(["export", str(folder), "--json", str(tmp_path / "summary.json"), "--kernels", "reference"])
    out = capsys.readouterr().out
    assert code == 0, out
    export = folder / "export"
    assert (export / "repro.py").is_file() and (export / "model.tflite").is_file()
    assert f"wrote {export}" in out and "reference: output 0 float32: 6 of 6 elements out of tolerance" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == json.loads((export / "export.json").read_text())
    assert summary["kernel_set"] == "reference" and summary["origin"]["driver"] == PLANTED
    assert main(["export", str(folder)]) == 0  # an earlier export is replaced


def test_a_case_json_and_a_database_signature_name_a_finding_too(tmp_path: Path, capsys, monkeypatch) -> None:
    case = tmp_path / "case.json"
    case.write_text(add_case().dumps())
    assert main(["export", str(case), "--driver", PLANTED, "--out", str(tmp_path / "a")]) == 0
    assert (tmp_path / "a" / "README.md").is_file()

    folder = _finding_folder(tmp_path / "run")
    stored = json.loads((folder / "finding.json").read_text())
    finding = Finding.from_json({**stored, "case": add_case().to_json(), "folder": str(folder)})
    db = FindingsDB(tmp_path / "findings.sqlite")
    db.save(FindingRecord(finding, "new", "t0", "run", "t0", "run"))
    monkeypatch.chdir(tmp_path)
    assert main(["export", "0123abcd", "--db", str(tmp_path / "findings.sqlite")]) == 0
    assert (tmp_path / "run" / "findings" / "0123abcd4567ef89" / "export" / "repro.py").is_file()
    db.save(FindingRecord(replace(finding, folder=""), "new", "t0", "run", "t0", "run"))  # its folder is gone
    assert main(["export", "0123abcd", "--db", str(tmp_path / "findings.sqlite")]) == 0
    assert (tmp_path / "runs" / "exports" / "0123abcd4567ef89" / "repro.py").is_file()


def test_a_finding_that_does_not_show_on_the_engine_alone_exits_1(tmp_path: Path, capsys) -> None:
    case = tmp_path / "case.json"
    case.write_text(add_case().dumps())
    code = main(["export", str(case), "--driver", "driver_under_test:create_litert_device"])
    assert code == 1
    assert "the engine alone computes the expected values" in capsys.readouterr().out
    assert (tmp_path / "export" / "repro.py").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-such-finding", "--db", "{tmp}/none.sqlite"], "no findings database"),
        (["{tmp}/case.json", "--driver", "driver_under_test:create_device"], "gives no engine model"),
        (["{tmp}/nocase.json", "--driver", PLANTED], "executes nothing"),
        (["{tmp}/case.json", "--driver", PLANTED, "--out", "{tmp}"], "not an earlier export"),
        (["{tmp}/case.json", "--driver", PLANTED, "--kernels", "fast"], "no kernel set 'fast'"),
        (["{tmp}/case.json", "--driver", "nope:factory"], "cannot import nope"),
    ],
)
def test_bad_input_is_misuse_with_a_clear_message(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    (tmp_path / "case.json").write_text(add_case().dumps())
    (tmp_path / "nocase.json").write_text(add_case().replace(request=None).dumps())
    code = main(["export", *(a.format(tmp=tmp_path) for a in args)])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("nnfuzz export: ") and message in err
